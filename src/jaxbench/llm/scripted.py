"""``scripted:DIR``: the test double. Plays the files of DIR, sorted by name, as successive answers.

After the last file it starts again from the first, so a short script serves any
budget. Calls are numbered in the order they arrive (thread-safe).
"""

from __future__ import annotations

import threading
from pathlib import Path

from jaxbench.llm.base import Completion, LLMConfigError, Provider, Sampling, register_provider


@register_provider("scripted")
class Scripted(Provider):
    offline = True

    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        directory = Path(spec)
        if not directory.is_dir():
            raise LLMConfigError(f"scripted:{spec}: no such directory")
        self.files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
        if not self.files:
            raise LLMConfigError(f"scripted:{spec}: the directory holds no response files")
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        with self._lock:
            path = self.files[self.calls % len(self.files)]
            self.calls += 1
        return Completion(text=path.read_text(), model=f"scripted:{self.spec}", cost=0.0,
                          extra={"file": path.name})
