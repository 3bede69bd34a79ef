"""The queue and the workers: submissions wait in order for one of ``config.workers`` threads,
which hands each to the executor's evaluator; an evaluation that ends without a verdict
(a harness error, a lost Ray node) is queued again at the front, up to ``config.retries``
times, then failed. Stopping aborts the evaluations in flight: their submissions stay queued
in the run directory and are evaluated again after a restart.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from jaxbench.contract import Settings
from jaxbench.executors import EvaluationLost, evaluate_with
from jaxbench.serve.ledger import Ledger
from jaxbench.serve.store import Store, Submission


class WorkQueue:
    """The submissions waiting for a worker, and those being evaluated. Called with the
    service's lock held (``lock``)."""

    def __init__(self, lock: threading.RLock) -> None:
        self._wakeup = threading.Condition(lock)
        self._ids: deque[str] = deque()
        self.running: set[str] = set()
        self.stopping = False

    def __len__(self) -> int:
        return len(self._ids)

    def push(self, sub_id: str, front: bool = False) -> None:
        if front:
            self._ids.appendleft(sub_id)
        else:
            self._ids.append(sub_id)
        self._wakeup.notify()

    def take(self) -> str | None:
        """The next submission's id, once there is one (it is then running); None when the
        service stops."""
        while not self._ids and not self.stopping:
            self._wakeup.wait()
        if self.stopping:
            return None
        sub_id = self._ids.popleft()
        self.running.add(sub_id)
        return sub_id

    def stop(self) -> bool:
        """Stops handing out work (every idle worker returns); whether any evaluation is still
        in flight."""
        self.stopping = True
        self._wakeup.notify_all()
        return bool(self.running)


class Workers:
    """The threads that evaluate queued submissions and settle each in the ledger."""

    def __init__(self, lock: threading.RLock, queue: WorkQueue, ledger: Ledger, store: Store,
                 retries: int) -> None:
        self._lock = lock
        self.queue = queue
        self.ledger = ledger
        self.store = store
        self.retries = retries
        self.evaluator: Any = None
        self._threads: list[threading.Thread] = []

    def start(self, evaluator: Any, count: int) -> None:
        self.evaluator = evaluator
        for index in range(count):
            thread = threading.Thread(target=self._work, name=f"jaxbench-serve-worker-{index}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def join(self, grace_s: float) -> None:
        for thread in self._threads:
            thread.join(timeout=grace_s)

    def _work(self) -> None:
        while True:
            with self._lock:
                sub_id = self.queue.take()
                if sub_id is None:
                    return
                sub = self.ledger.subs[sub_id]
                sub.state = "running"
                sub.attempts += 1
            self._evaluate(sub)

    def _evaluate(self, sub: Submission) -> None:
        started = time.monotonic()
        source = self.store.source(sub)
        error: str | None = None
        result: dict[str, Any] | None = None
        try:
            if source is None:
                raise RuntimeError(f"the source {sub.source_file} is missing from the run directory")
            # fresh trial keys per evaluation: a caller reads each verdict before resubmitting
            settings = Settings(target=sub.target, mode=sub.resolved_mode, size=sub.size,
                                trials=sub.trials, timeout_s=sub.timeout_s, chip=sub.chip,
                                fresh_keys=True)
            result = evaluate_with(self.evaluator, source, sub.task, settings)
        except EvaluationLost as exc:
            error = f"no verdict: {exc}"
        except Exception as exc:  # noqa: BLE001 - a harness error: retried, then reported
            error = f"no verdict: the evaluation failed ({type(exc).__name__}: {exc})"
        elapsed = time.monotonic() - started
        with self._lock:
            self.queue.running.discard(sub.id)
            if self.queue.stopping:  # aborted: not a verdict; queued again after a restart
                sub.state = "queued"
                return
            if result is not None:
                self.ledger.verdict(sub, result, elapsed)
            elif sub.attempts <= self.retries:
                sub.state = "queued"
                self.queue.push(sub.id, front=True)
            else:
                self.ledger.fail(sub, error or "no verdict")


__all__ = ["WorkQueue", "Workers"]
