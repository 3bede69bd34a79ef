"""The service's core, without HTTP: accepting submissions, the queue, the workers that hand
them to an executor's evaluator, the verdict cache, and waking whoever waits for a verdict.

The HTTP layer (:mod:`jaxbench.serve.app`) only parses and answers; everything a submission
goes through is here, so the service behaves the same whatever calls it (the HTTP routes, the
OpenEnv environment, tests). :class:`Service` puts together, under one lock:

- :mod:`jaxbench.serve.admission`: the checks a request passes, the callers' limits;
- :mod:`jaxbench.serve.ledger`: the submissions and batches, the verdict cache, outcomes;
- :mod:`jaxbench.serve.workers`: the queue and the threads that evaluate;
- :mod:`jaxbench.serve.waiting`: waking whoever waits for a verdict;
- :mod:`jaxbench.serve.store`: the run directory everything is kept in.
"""

from __future__ import annotations

import threading
from typing import Any

from jaxbench.executors import make_evaluator
from jaxbench.serve.admission import Admission
from jaxbench.serve.auth import Principal
from jaxbench.serve.config import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_SOURCE_BYTES,
    ID_PATTERN,
    Request,
    ServeConfig,
    ServeError,
)
from jaxbench.serve.ledger import Ledger, view
from jaxbench.serve.metrics import Metrics
from jaxbench.serve.store import Store, Submission
from jaxbench.serve.waiting import Waiters
from jaxbench.serve.workers import Workers, WorkQueue


class Service:
    """Accepts submissions, evaluates them on ``config.workers`` threads, persists everything.

    Thread-safe: the HTTP routes call it from the server's threads and event loop."""

    def __init__(self, config: ServeConfig, evaluator: Any | None = None) -> None:
        self.config = config
        self.store = Store(config.out)
        self.metrics = Metrics()
        self.admission = Admission(config)
        self.quotas = self.admission.quotas
        self._lock = threading.RLock()
        self._queue = WorkQueue(self._lock)
        self._ledger = Ledger(config, self.store, self.metrics, self._queue.push,
                              notify=lambda sub_id: self._waiters.notify(sub_id))
        self._waiters = Waiters(self._lock, self._ledger.subs.get)
        self._workers = Workers(self._lock, self._queue, self._ledger, self.store, config.retries)
        self._evaluator = evaluator
        with self._lock:
            self._ledger.restore(self.store.replay())

    # -- start and stop --------------------------------------------------------------------------
    def start(self) -> None:
        """Connects the executor and starts the workers (queued work from before a restart
        starts at once)."""
        if self._evaluator is None:
            self._evaluator = make_evaluator(self.config.executor, self.store.secret,
                                             spares=min(2, self.config.workers),
                                             ray_address=self.config.ray_address)
        self.store.record({"type": "serve_start", "executor": self.config.executor,
                           "workers": self.config.workers,
                           "resumed": self.unfinished()})
        self._workers.start(self._evaluator, self.config.workers)

    def stop(self, grace_s: float = 5.0) -> None:
        """Stops taking work; evaluations in flight are aborted (their submissions stay queued
        in the run directory and are evaluated again after a restart)."""
        with self._lock:
            if self._queue.stopping:
                return
            busy = self._queue.stop()
        if busy and self._evaluator is not None:
            self._evaluator.abort()
        self._workers.join(grace_s)
        if self._evaluator is not None:
            self._evaluator.close()
        try:
            self.store.record({"type": "serve_stop"})
        except OSError:
            pass

    # -- accepting -------------------------------------------------------------------------------
    def submit(self, requests: list[Request], principal: Principal,
               batch_id: str | None = None,
               is_batch: bool = False) -> tuple[str | None, list[dict[str, Any]]]:
        """Accepts requests all together or none (ServeError): returns the batch id (for a
        batch) and one view per request. A request whose id is already known with the same
        fingerprint is that submission again (``duplicate``), never a second evaluation."""
        batch = self.admission.batch_of(requests, batch_id, is_batch)
        prepared = [self.admission.prepare(r, principal, batch, self._evaluator) for r in requests]
        ids = [sub.id for sub, _ in prepared]
        if len(set(ids)) != len(ids):
            raise ServeError(422, "the same id twice in one batch")
        with self._lock:
            self._ledger.check_batch(batch, principal.name, ids)
            fresh = [(sub, source) for sub, source in prepared if not self._ledger.known(sub)]
            self._admit(principal, len(fresh))
            for sub, source in fresh:
                sub.source_file = self.store.keep_source(source)
                self._ledger.add(sub)
            fresh_ids = {sub.id for sub, _ in fresh}
            views: list[dict[str, Any]] = []
            for sub, _ in prepared:
                out = self.view(self._ledger.subs[sub.id])
                if sub.id not in fresh_ids:
                    out["duplicate"] = True
                    self.metrics.submitted("duplicate")
                views.append(out)
        return batch, views

    def _admit(self, principal: Principal, count: int) -> None:
        """Refuses ``count`` new submissions while stopping, when the queue is full, or over
        the caller's limits. Called with the lock held."""
        if self._queue.stopping:
            raise ServeError(503, "the service is stopping", {"Retry-After": "5"})
        if len(self._queue) + count > self.config.max_queue:
            self.metrics.refusal("503")
            raise ServeError(503, f"the queue is full ({len(self._queue)} waiting)",
                             {"Retry-After": "10"})
        refusal = self.admission.refusal(principal, count, self._ledger.unfinished(principal.name))
        if refusal is not None:
            self.metrics.refusal("429")
            raise ServeError(429, refusal.message, {"Retry-After": str(refusal.retry_after_s)})

    # -- waiting ---------------------------------------------------------------------------------
    async def wait(self, sub_id: str, timeout_s: float) -> None:
        """Returns when the submission has finished or after ``timeout_s`` (on the caller's
        event loop, without holding a thread)."""
        await self._waiters.wait(sub_id, timeout_s)

    def wait_sync(self, sub_id: str, timeout_s: float) -> dict[str, Any] | None:
        """Blocks until the submission has finished (its view) or ``timeout_s`` passed."""
        return self._waiters.wait_sync(sub_id, timeout_s)

    # -- reading ---------------------------------------------------------------------------------
    def get(self, sub_id: str, principal: Principal) -> dict[str, Any]:
        with self._lock:
            return self.view(self._ledger.owned(sub_id, principal))

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

    def view(self, sub: Submission) -> dict[str, Any]:
        """What a caller sees of a submission."""
        return view(sub)

    def unfinished(self) -> int:
        """Submissions without a verdict yet (queued, or in flight): after :meth:`stop`, those
        that stay queued in the run directory for the next start."""
        with self._lock:
            return sum(not s.finished_state for s in self._ledger.subs.values())

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"queue_length": len(self._queue), "in_flight": len(self._queue.running),
                    "submissions": len(self._ledger.subs), "workers": self.config.workers,
                    "executor": self.config.executor, "stopping": self._queue.stopping}

    def render_metrics(self) -> str:
        state = self.status()
        gauges = {"queue_length": state["queue_length"], "in_flight": state["in_flight"],
                  "workers": state["workers"]}
        for name, value in self.metrics.latency_quantiles().items():
            if value is not None:
                gauges[f"latency_{name}_seconds"] = value
        return self.metrics.render(gauges, {"executor": self.config.executor})


__all__ = ["DEFAULT_MAX_BATCH", "DEFAULT_MAX_SOURCE_BYTES", "ID_PATTERN", "Request", "ServeConfig",
           "ServeError", "Service"]
