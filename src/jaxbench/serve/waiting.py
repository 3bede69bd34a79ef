"""Who waits for which submission: an HTTP route waits on its event loop (without holding a
thread), the in-process OpenEnv environment blocks its thread; both are woken when the
submission finishes.

:class:`Waiters` owns its table under its own lock, a leaf lock: nothing else is locked while
it is held, and the wake-ups go out after it is released. It knows nothing of submissions:
:class:`~jaxbench.serve.state.ServiceState` adds a waiter *before* it looks whether the
submission has finished and tells the waiters when one finishes, so no outcome is missed.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass


@dataclass(eq=False)
class LoopWaiter:
    """A coroutine waiting on its event loop: woken by setting its event on that loop."""

    loop: asyncio.AbstractEventLoop
    event: asyncio.Event

    def set(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.event.set)
        except RuntimeError:  # that loop is closed
            pass


Waiter = LoopWaiter | threading.Event  # a blocked thread waits on a threading.Event


class Waiters:
    """The waiters of each submission, until it finishes or they stop waiting."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Waiter]] = {}

    def add(self, sub_id: str, waiter: Waiter) -> None:
        with self._lock:
            self._waiting.setdefault(sub_id, []).append(waiter)

    def remove(self, sub_id: str, waiter: Waiter) -> None:
        """``waiter`` stops waiting (timed out, or woken already: then it is gone)."""
        with self._lock:
            entries = self._waiting.get(sub_id, [])
            if waiter in entries:
                entries.remove(waiter)
            if not entries:
                self._waiting.pop(sub_id, None)

    def notify(self, sub_id: str) -> None:
        """``sub_id`` has finished: wakes its waiters."""
        with self._lock:
            woken = self._waiting.pop(sub_id, [])
        for waiter in woken:
            waiter.set()


__all__ = ["LoopWaiter", "Waiter", "Waiters"]
