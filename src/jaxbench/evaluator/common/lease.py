"""The device lease: how concurrent evaluations share one accelerator.

In device mode several candidates are in flight at once (tracing and exporting on the
host's cores, compiling and checking in trusted runners), and only timing needs the
device to itself. A runner holds the lease *shared* while it compiles and runs the
correctness trials, and *exclusively* while it times: an exclusive holder waits until
every shared holder has let go, and while it waits no new shared holder gets in, so a
timing never overlaps another candidate's compile or check on the same device, nor
another timing. Shared work of many candidates overlaps freely.

The parent holds the lease on a runner's behalf (:meth:`jaxbench.evaluator.parent.judge_client
.Runner.request`): the runner says when it moves to timing and back, and waits for the
parent's go.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Requests a chip's owner takes at once: its environment variable (the parent sets it, the
# owner reads it).
OWNER_DEPTH = "JAXBENCH_OWNER_DEPTH"

SHARED, EXCLUSIVE = "shared", "exclusive"


class DeviceLease:
    """A readers-writer lock that prefers its writer (the timing).

    With ``record``, every hold is kept as ``(kind, start, end)`` in :attr:`history`
    (monotonic seconds), for tests and the pipeline benchmark."""

    def __init__(self, record: bool = False) -> None:
        self._changed = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0  # exclusive holders waiting: they block new shared holders
        self.history: list[tuple[str, float, float]] | None = [] if record else None
        self._since: dict[int, float] = {}  # when each recording thread took its hold

    def acquire(self, kind: str) -> None:
        with self._changed:
            if kind == EXCLUSIVE:
                self._waiting += 1
                try:
                    self._changed.wait_for(lambda: not self._exclusive and self._shared == 0)
                finally:
                    self._waiting -= 1
                self._exclusive = True
            elif kind == SHARED:
                self._changed.wait_for(lambda: not self._exclusive and self._waiting == 0)
                self._shared += 1
            else:
                raise ValueError(f"unknown lease kind {kind!r}")
            if self.history is not None:
                self._since[threading.get_ident()] = time.monotonic()

    def release(self, kind: str) -> None:
        with self._changed:
            if kind == EXCLUSIVE:
                assert self._exclusive, "released an exclusive lease that is not held"
                self._exclusive = False
            else:
                assert self._shared > 0, "released a shared lease that is not held"
                self._shared -= 1
            if self.history is not None:
                self.history.append((kind, self._since.pop(threading.get_ident()),
                                     time.monotonic()))
            self._changed.notify_all()

    @contextmanager
    def hold(self, kind: str) -> Iterator[None]:
        self.acquire(kind)
        try:
            yield
        finally:
            self.release(kind)


def overlaps(history: list[tuple[str, float, float]]) -> list[tuple[tuple, tuple]]:
    """Pairs of holds in ``history`` that break the lease's promise: an exclusive hold that
    overlaps any other hold."""
    bad = []
    for i, a in enumerate(history):
        for b in history[i + 1:]:
            if EXCLUSIVE in (a[0], b[0]) and a[1] < b[2] and b[1] < a[2]:
                bad.append((a, b))
    return bad


__all__ = ["EXCLUSIVE", "SHARED", "DeviceLease", "overlaps"]
