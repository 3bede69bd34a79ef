"""``scripted:DIR``: the test double. Plays the files of DIR, sorted by name, as successive answers.

After the last file it starts again from the first, so a short script serves any
budget. Calls are numbered in the order they arrive (thread-safe). Answers are
unpriced (cost None): nothing is paid, and the report says "unpriced", not $0.

With a seed (``--seed``), like a seeded provider, the answer depends on the call, not on
when it arrives: the file is chosen by the call's seed (its sample id and the run's seed),
so a run whose calls overlap in threads gives the same answers every time.

``scripted:DIR?latency=SECONDS`` waits that long per answer (a model that sleeps like a
real one, for throughput measurements).

Where DIR holds a folder named after a task (``DIR/12p_rmsnorm/``), that task's calls are
answered from its files instead (a call's sample id starts with its task), so one run over
many tasks can answer each with kernels for that task.
"""

from __future__ import annotations

import threading
from pathlib import Path

from jaxbench.llm.base import Completion, LLMCancelled, LLMConfigError, Provider, Sampling, register_provider


@register_provider("scripted")
class Scripted(Provider):
    offline = True

    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        path, _, query = spec.partition("?")
        self.latency_s = 0.0
        if query:
            key, _, value = query.partition("=")
            try:
                if key != "latency":
                    raise ValueError
                self.latency_s = float(value)
            except ValueError:
                raise LLMConfigError(f"scripted:{spec}: the only option is ?latency=SECONDS") from None
        directory = Path(path)
        if not directory.is_dir():
            raise LLMConfigError(f"scripted:{spec}: no such directory")
        self.files = _answers(directory)
        self.per_task = {p.name: _answers(p) for p in directory.iterdir()
                         if p.is_dir() and not p.name.startswith(".")}
        self.per_task = {name: files for name, files in self.per_task.items() if files}
        if not self.files and not self.per_task:
            raise LLMConfigError(f"scripted:{spec}: the directory holds no response files")
        self.calls = 0
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()  # a call sleeping out its latency is abandoned at once

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        files = self.per_task.get(sample.split("/", 1)[0], self.files)
        if not files:
            raise LLMConfigError(f"scripted:{self.spec}: no answers for {sample.split('/', 1)[0]} "
                                 "(no folder of that name, and none at the top)")
        with self._lock:
            index = self.calls if sampling.seed is None else sampling.call_seed(sample)
            path = files[index % len(files)]
            self.calls += 1
        if self.latency_s and self._cancelled.wait(self.latency_s):
            raise LLMCancelled(f"scripted:{self.spec}: the run was stopped during the call",
                               sent=True)
        return Completion(text=path.read_text(), model=f"scripted:{self.spec}", cost=None,
                          finish_reason="stop", extra={"file": path.name})


def _answers(directory: Path) -> list[Path]:
    """A folder's answer files, sorted by name (hidden files left out)."""
    return sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
