"""The service's core, without HTTP: accepting submissions, the queue, the workers that hand
them to an executor's evaluator, the verdict cache, and waking whoever waits for a verdict.

The HTTP layer (:mod:`jaxbench.serve.app`) only parses and answers; everything a submission
goes through is here, so the service behaves the same whatever calls it (the HTTP routes, the
OpenEnv environment, tests). :class:`Service` puts together:

- :mod:`jaxbench.serve.admission`: the checks a request passes, the callers' limits;
- :mod:`jaxbench.serve.state`: the one owner of the service's mutable state;
- :mod:`jaxbench.serve.ledger`: that state: the submissions and batches, the queue, the verdict
  cache, outcomes;
- :mod:`jaxbench.serve.workers`: the threads that evaluate;
- :mod:`jaxbench.serve.waiting`: waking whoever waits for a verdict;
- :mod:`jaxbench.serve.store`: the run directory everything is kept in.

Who owns what, and which lock guards it:

- :class:`~jaxbench.serve.state.ServiceState` owns every submission (its state and outcome),
  the batches, the verdict cache and its followers, the per-caller count of unfinished
  submissions, and the queue (waiting ids, running ids, ``stopping``): all of it lives in its
  :class:`~jaxbench.serve.ledger.Ledger` (and the ledger's ``WorkQueue``), guarded by
  ``ServiceState._lock``. Only ``ServiceState`` takes that lock, once per operation; the
  ledger is never reached any other way. Workers wait for work on a condition of that lock.
  A submission's request fields (task, target, source file, ...) are set before it is kept
  and never change, so a worker reads them without the lock.
- :class:`~jaxbench.serve.waiting.Waiters` owns who waits for which submission, under its own
  ``Waiters._lock``.
- :class:`~jaxbench.serve.metrics.Metrics` (counters), the quota windows
  (:class:`~jaxbench.serve.limits.QuotaWindows`) and the run directory
  (:class:`~jaxbench.runs.RunDir`, behind :class:`~jaxbench.serve.store.Store`) each own their
  data under their own lock.
- :class:`~jaxbench.serve.workers.Workers` and :class:`Service` own no shared state: the
  workers' threads are started and joined by whoever starts and stops the service, and the
  evaluator is set once by :meth:`Service.start`, before any worker runs.

Lock order: ``ServiceState._lock`` first; the other locks are leaves, taken inside it (an
outcome is written to the run directory, counted and its waiters woken while the state's lock
is held) or alone, and never around another lock. Nothing calls back through a function
handed across: each object calls the ones it holds, downwards
(``Service`` -> ``ServiceState`` -> ``Ledger`` -> ``Store``, ``Metrics``, ``Waiters``).
"""

from __future__ import annotations

from jaxbench.executors import EvaluatorLike, make_evaluator
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
from jaxbench.serve.ledger import SubmissionView
from jaxbench.serve.metrics import Metrics
from jaxbench.serve.state import ServiceState, ServiceStatus
from jaxbench.serve.store import Store
from jaxbench.serve.workers import Workers


class Service:
    """Accepts submissions, evaluates them on ``config.workers`` threads, persists everything.

    Thread-safe: the HTTP routes call it from the server's threads and event loop."""

    def __init__(self, config: ServeConfig, evaluator: EvaluatorLike | None = None) -> None:
        self.config = config
        self.store = Store(config.out)
        self.metrics = Metrics()
        self.admission = Admission(config)
        self.quotas = self.admission.quotas
        self._state = ServiceState(config, self.store, self.metrics, self.admission)
        self._workers = Workers(self._state, self.store)
        self._evaluator = evaluator

    # -- start and stop --------------------------------------------------------------------------
    def start(self) -> None:
        """Connects the executor and starts the workers (queued work from before a restart
        starts at once)."""
        if self._evaluator is None:
            self._evaluator = make_evaluator(self.config.executor, self.store.secret,
                                             spares=min(2, self.config.workers),
                                             ray_address=self.config.ray_address)
        self.store.record_start(self.config.executor, self.config.workers, self.unfinished())
        self._workers.start(self._evaluator, self.config.workers)

    def stop(self, grace_s: float = 5.0) -> None:
        """Stops taking work; evaluations in flight are aborted (their submissions stay queued
        in the run directory and are evaluated again after a restart)."""
        if not self._state.stop():
            return
        if self._state.in_flight() and self._evaluator is not None:
            self._evaluator.abort()
        self._workers.join(grace_s)
        if self._evaluator is not None:
            self._evaluator.close()
        try:
            self.store.record_stop()
        except OSError:
            pass

    # -- accepting -------------------------------------------------------------------------------
    def submit(self, requests: list[Request], principal: Principal,
               batch_id: str | None = None,
               is_batch: bool = False) -> tuple[str | None, list[SubmissionView]]:
        """Accepts requests all together or none (ServeError): returns the batch id (for a
        batch) and one view per request. A request whose id is already known with the same
        fingerprint is that submission again (``duplicate``), never a second evaluation."""
        batch = self.admission.batch_of(requests, batch_id, is_batch)
        prepared = [self.admission.prepare(r, principal, batch, self._evaluator) for r in requests]
        ids = [sub.id for sub, _ in prepared]
        if len(set(ids)) != len(ids):
            raise ServeError(422, "the same id twice in one batch")
        return batch, self._state.accept(prepared, principal, batch)

    # -- waiting ---------------------------------------------------------------------------------
    async def wait(self, sub_id: str, timeout_s: float) -> None:
        """Returns when the submission has finished or after ``timeout_s`` (on the caller's
        event loop, without holding a thread)."""
        await self._state.wait(sub_id, timeout_s)

    def wait_sync(self, sub_id: str, timeout_s: float) -> SubmissionView | None:
        """Blocks until the submission has finished (its view) or ``timeout_s`` passed."""
        return self._state.wait_sync(sub_id, timeout_s)

    # -- reading ---------------------------------------------------------------------------------
    def get(self, sub_id: str, principal: Principal) -> SubmissionView:
        return self._state.get(sub_id, principal)

    def batch(self, batch_id: str, principal: Principal) -> list[str]:
        return self._state.batch(batch_id, principal)

    def check_ids(self, ids: list[str], principal: Principal) -> None:
        self._state.check_ids(ids, principal)

    def finished(self, sub_id: str) -> bool:
        return self._state.finished(sub_id)

    def unfinished(self) -> int:
        """Submissions without a verdict yet (queued, or in flight): after :meth:`stop`, those
        that stay queued in the run directory for the next start."""
        return self._state.unfinished()

    def status(self) -> ServiceStatus:
        return self._state.status()

    def render_metrics(self) -> str:
        state = self.status()
        gauges: dict[str, float] = {"queue_length": state["queue_length"],
                                    "in_flight": state["in_flight"], "workers": state["workers"]}
        for name, value in self.metrics.latency_quantiles().items():
            if value is not None:
                gauges[f"latency_{name}_seconds"] = value
        return self.metrics.render(gauges, {"executor": self.config.executor})


__all__ = ["DEFAULT_MAX_BATCH", "DEFAULT_MAX_SOURCE_BYTES", "ID_PATTERN", "Request", "ServeConfig",
           "ServeError", "Service"]
