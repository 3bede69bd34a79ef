"""Per-caller limits: a quota of submissions per window and a cap on unfinished ones.

Both answer with HTTP 429 and a ``Retry-After`` (whole seconds): for the quota, when the
oldest submission in the window leaves it; for the concurrency cap, a short wait. A retried
submission (same id, :mod:`jaxbench.serve.store`) costs neither.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass


@dataclass
class Refusal:
    """Why a request was refused: the message and the seconds to wait before retrying."""

    message: str
    retry_after_s: int


class QuotaWindows:
    """Sliding-window submission counts, one window per caller."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._lock = threading.Lock()
        self._times: dict[str, deque[float]] = {}

    def take(self, name: str, count: int, quota: int | None, now: float | None = None) -> Refusal | None:
        """Counts ``count`` submissions for ``name`` when they fit in its quota; else a
        refusal, and nothing is counted."""
        if quota is None:
            return None
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._times.setdefault(name, deque())
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) + count > quota:
                if count > quota:
                    wait = self.window_s
                else:
                    # the (len + count - quota)-th oldest must leave the window first
                    leaving = times[len(times) + count - quota - 1]
                    wait = leaving + self.window_s - now
                return Refusal(f"quota: {quota} submissions per {self.window_s:g} s for "
                               f"{name}; {len(times)} used in the window, {count} asked for",
                               max(1, math.ceil(wait)))
            times.extend([now] * count)
            return None


def concurrency_refusal(name: str, unfinished: int, count: int, limit: int | None,
                        retry_after_s: int) -> Refusal | None:
    """A refusal when ``count`` more submissions would put ``name`` over ``limit`` unfinished."""
    if limit is None or unfinished + count <= limit:
        return None
    return Refusal(f"concurrency: at most {limit} unfinished submissions for {name}; "
                   f"{unfinished} queued or running, {count} more asked for", retry_after_s)


__all__ = ["QuotaWindows", "Refusal", "concurrency_refusal"]
