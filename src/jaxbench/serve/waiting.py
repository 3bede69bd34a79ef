"""Waiting for a verdict: an HTTP route waits on its event loop (without holding a thread), the
in-process OpenEnv environment blocks its thread; both are woken when a submission finishes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from jaxbench.serve.ledger import view
from jaxbench.serve.store import Submission


class Waiters:
    """Who waits for which submission. ``lookup`` finds a submission by id; ``lock`` is the
    service's (:meth:`notify` is called with it held)."""

    def __init__(self, lock: threading.RLock, lookup: Callable[[str], Submission | None]) -> None:
        self._lock = lock
        self._lookup = lookup
        self._done = threading.Condition(lock)
        self._events: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    def notify(self, sub_id: str) -> None:
        """``sub_id`` has finished: wakes its waiters."""
        self._done.notify_all()
        for loop, event in self._events.pop(sub_id, []):
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop is closed
                pass

    async def wait(self, sub_id: str, timeout_s: float) -> None:
        """Returns when the submission has finished or after ``timeout_s`` (on the caller's
        event loop, without holding a thread)."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        with self._lock:
            sub = self._lookup(sub_id)
            if sub is None or sub.finished_state:
                return
            self._events.setdefault(sub_id, []).append((loop, event))
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            with self._lock:
                entries = self._events.get(sub_id, [])
                if (loop, event) in entries:
                    entries.remove((loop, event))

    def wait_sync(self, sub_id: str, timeout_s: float) -> dict[str, Any] | None:
        """Blocks until the submission has finished (its view) or ``timeout_s`` passed."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                sub = self._lookup(sub_id)
                if sub is None:
                    return None
                left = deadline - time.monotonic()
                if sub.finished_state or left <= 0:
                    return view(sub)
                self._done.wait(left)


__all__ = ["Waiters"]
