"""The service's state and its one owner: :class:`ServiceState` holds every submission, batch,
cached verdict and the queue (its :class:`~jaxbench.serve.ledger.Ledger`) under one lock, and
is the only object that takes that lock. Each method is one step done whole under it: accepting
a batch (checked against the caller's limits and the queue together), handing a submission to
a worker, settling an evaluation, stopping, reading.

Workers wait for queued work on a condition of that lock; callers waiting for a verdict wait
on their own event (:mod:`jaxbench.serve.waiting`), added before the state is looked at, so
an outcome in between is never missed.
"""

from __future__ import annotations

import asyncio
import threading
import time

from jaxbench.contract import EvaluationResult
from jaxbench.serve.admission import Admission
from jaxbench.serve.auth import Principal
from jaxbench.serve.config import ServeConfig, ServeError
from jaxbench.serve.ledger import Ledger, SubmissionView, view
from jaxbench.serve.metrics import Metrics
from jaxbench.serve.store import Store, Submission
from jaxbench.serve.waiting import LoopWaiter, Waiter, Waiters
from jaxbench.serve.wire import ServiceStatus


class ServiceState:
    """Owns the ledger (and its queue) under ``_lock``; thread-safe."""

    def __init__(self, config: ServeConfig, store: Store, metrics: Metrics,
                 admission: Admission) -> None:
        self.config = config
        self.store = store
        self.metrics = metrics
        self.admission = admission
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # a worker waits for queued work
        self._waiters = Waiters()
        self._ledger = Ledger(config, store, metrics, self._waiters)
        with self._lock:
            self._ledger.restore(store.replay())

    # -- accepting -------------------------------------------------------------------------------
    def accept(self, prepared: list[tuple[Submission, str]], principal: Principal,
               batch: str | None) -> list[SubmissionView]:
        """Keeps and routes the new submissions of ``prepared`` (each with its source) all
        together or none (ServeError): one view per submission, ``duplicate`` for one already
        kept (a retry)."""
        ids = [sub.id for sub, _ in prepared]
        with self._lock:
            ledger = self._ledger
            ledger.check_batch(batch, principal.name, ids)
            fresh = [(sub, source) for sub, source in prepared if not ledger.known(sub)]
            self._admit(principal, len(fresh))
            for sub, source in fresh:
                sub.source_file = self.store.keep_source(source)
                ledger.add(sub)
            self._hand_out()
            fresh_ids = {sub.id for sub, _ in fresh}
            views: list[SubmissionView] = []
            for sub, _ in prepared:
                out = view(ledger.subs[sub.id])
                if sub.id not in fresh_ids:
                    out["duplicate"] = True
                    self.metrics.submitted("duplicate")
                views.append(out)
        return views

    def _admit(self, principal: Principal, count: int) -> None:
        """Refuses ``count`` new submissions while stopping, when the queue is full, or over
        the caller's limits. Called with the lock held."""
        queue = self._ledger.queue
        if queue.stopping:
            raise ServeError(503, "the service is stopping", {"Retry-After": "5"})
        if len(queue) + count > self.config.max_queue:
            self.metrics.refusal("503")
            raise ServeError(503, f"the queue is full ({len(queue)} waiting)",
                             {"Retry-After": "10"})
        refusal = self.admission.refusal(principal, count, self._ledger.unfinished(principal.name))
        if refusal is not None:
            self.metrics.refusal("429")
            raise ServeError(429, refusal.message, {"Retry-After": str(refusal.retry_after_s)})

    def _hand_out(self) -> None:
        """Wakes as many idle workers as there is queued work. Called with the lock held."""
        self._work.notify(len(self._ledger.queue))

    # -- evaluating ------------------------------------------------------------------------------
    def take(self) -> Submission | None:
        """Blocks until a submission is queued and returns it, running; None once stopping.
        Its request fields never change once accepted, so the worker reads them unlocked."""
        with self._lock:
            while not self._ledger.queue.ready():
                self._work.wait()
            return self._ledger.start_next()

    def settle(self, sub: Submission, result: EvaluationResult | None, error: str | None,
               evaluation_s: float) -> None:
        """An evaluation of ``sub`` ended with ``result``, or without one and ``error`` saying
        why (:meth:`Ledger.settle`)."""
        with self._lock:
            self._ledger.settle(sub, result, error, evaluation_s)
            self._hand_out()

    def stop(self) -> bool:
        """Stops handing out work (every idle worker returns); False when stopped already."""
        with self._lock:
            queue = self._ledger.queue
            if queue.stopping:
                return False
            queue.stopping = True
            self._work.notify_all()
            return True

    # -- waiting ---------------------------------------------------------------------------------
    def _pending(self, sub_id: str) -> bool | None:
        """Whether ``sub_id`` has no outcome yet (None: no such submission)."""
        with self._lock:
            sub = self._ledger.subs.get(sub_id)
            return None if sub is None else not sub.finished_state

    async def wait(self, sub_id: str, timeout_s: float) -> None:
        """Returns when the submission has finished or after ``timeout_s`` (on the caller's
        event loop, without holding a thread)."""
        waiter = LoopWaiter(asyncio.get_running_loop(), asyncio.Event())
        self._waiters.add(sub_id, waiter)  # first: an outcome from here on wakes it
        try:
            if self._pending(sub_id):
                await asyncio.wait_for(waiter.event.wait(), timeout_s)
        except TimeoutError:
            pass
        finally:
            self._waiters.remove(sub_id, waiter)

    def wait_sync(self, sub_id: str, timeout_s: float) -> SubmissionView | None:
        """Blocks until the submission has finished (its view) or ``timeout_s`` passed (its
        view then too); None for no such submission."""
        deadline = time.monotonic() + timeout_s
        waiter: Waiter = threading.Event()
        self._waiters.add(sub_id, waiter)  # first: an outcome from here on wakes it
        try:
            pending = self._pending(sub_id)
            if pending is None:
                return None
            if pending:
                waiter.wait(max(0.0, deadline - time.monotonic()))
        finally:
            self._waiters.remove(sub_id, waiter)
        with self._lock:
            return view(self._ledger.subs[sub_id])

    # -- reading ---------------------------------------------------------------------------------
    def get(self, sub_id: str, principal: Principal) -> SubmissionView:
        with self._lock:
            return view(self._ledger.owned(sub_id, principal))

    def batch(self, batch_id: str, principal: Principal) -> list[str]:
        with self._lock:
            return self._ledger.batch_ids(batch_id, principal)

    def check_ids(self, ids: list[str], principal: Principal) -> None:
        with self._lock:
            for sub_id in ids:
                self._ledger.owned(sub_id, principal)

    def finished(self, sub_id: str) -> bool:
        with self._lock:
            return self._ledger.subs[sub_id].finished_state

    def unfinished(self) -> int:
        with self._lock:
            return sum(not s.finished_state for s in self._ledger.subs.values())

    def in_flight(self) -> int:
        with self._lock:
            return len(self._ledger.queue.running)

    def status(self) -> ServiceStatus:
        with self._lock:
            queue = self._ledger.queue
            return {"queue_length": len(queue), "in_flight": len(queue.running),
                    "submissions": len(self._ledger.subs), "workers": self.config.workers,
                    "executor": self.config.executor, "stopping": queue.stopping}


__all__ = ["ServiceState", "ServiceStatus"]
