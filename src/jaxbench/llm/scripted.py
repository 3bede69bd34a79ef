"""``scripted:DIR``: the test double. Plays the files of DIR, sorted by name, as successive answers.

After the last file it starts again from the first, so a short script serves any
budget. Calls are numbered in the order they arrive (thread-safe). Answers are
unpriced (cost None): nothing is paid, and the report says "unpriced", not $0.

With a seed (``--seed``), like a seeded provider, the answer depends on the call, not on
when it arrives: the file is chosen by the call's seed (its sample id and the run's seed),
so a run whose calls overlap in threads gives the same answers every time.

``scripted:DIR?latency=SECONDS`` waits that long per answer (a model that sleeps like a
real one, for throughput measurements).
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
        self.files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
        if not self.files:
            raise LLMConfigError(f"scripted:{spec}: the directory holds no response files")
        self.calls = 0
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()  # a call sleeping out its latency is abandoned at once

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        with self._lock:
            index = self.calls if sampling.seed is None else sampling.call_seed(sample)
            path = self.files[index % len(self.files)]
            self.calls += 1
        if self.latency_s and self._cancelled.wait(self.latency_s):
            raise LLMCancelled(f"scripted:{self.spec}: the run was stopped during the call",
                               sent=True)
        return Completion(text=path.read_text(), model=f"scripted:{self.spec}", cost=None,
                          finish_reason="stop", extra={"file": path.name})
