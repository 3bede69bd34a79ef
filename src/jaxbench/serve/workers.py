"""The workers: ``config.workers`` threads, each taking the next queued submission from the
service's state, handing it to the executor's evaluator and settling its
:class:`~jaxbench.contract.EvaluationResult` there. An evaluation that ends without a verdict
(a harness error, a lost Ray node) is queued again at the front, up to ``config.retries``
times, then failed (:meth:`~jaxbench.serve.ledger.Ledger.settle`).
Stopping aborts the evaluations in flight: their submissions stay queued in the run directory
and are evaluated again after a restart.

The workers share no state with anything: they hold no lock and keep no submission; all they
read or change goes through :class:`~jaxbench.serve.state.ServiceState`.
"""

from __future__ import annotations

import threading
import time

from jaxbench.contract import EvaluationResult
from jaxbench.executors import EvaluationLost, EvaluatorLike, evaluate_with
from jaxbench.serve.state import ServiceState
from jaxbench.serve.store import Store, Submission


class Workers:
    """The threads that evaluate queued submissions."""

    def __init__(self, state: ServiceState, store: Store) -> None:
        self.state = state
        self.store = store
        self._threads: list[threading.Thread] = []

    def start(self, evaluator: EvaluatorLike, count: int) -> None:
        for index in range(count):
            thread = threading.Thread(target=self._work, args=(evaluator,),
                                      name=f"jaxbench-serve-worker-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def join(self, grace_s: float) -> None:
        for thread in self._threads:
            thread.join(timeout=grace_s)

    def _work(self, evaluator: EvaluatorLike) -> None:
        while (sub := self.state.take()) is not None:
            started = time.monotonic()
            result, error = self._evaluate(evaluator, sub)
            self.state.settle(sub, result, error, time.monotonic() - started)

    def _evaluate(self, evaluator: EvaluatorLike,
                  sub: Submission) -> tuple[EvaluationResult | None, str | None]:
        """The evaluator's result, or why there is none."""
        source = self.store.source(sub)
        try:
            if source is None:
                raise RuntimeError(f"the source {sub.source_file} is missing from the run directory")
            result = evaluate_with(evaluator, source, sub.task, sub.settings)
            if not isinstance(result, EvaluationResult):
                raise TypeError(f"the evaluator returned a {type(result).__name__}, not an "
                                "EvaluationResult")
            return result, None
        except EvaluationLost as exc:
            return None, f"no verdict: {exc}"
        except Exception as exc:  # noqa: BLE001 - a harness error: retried, then reported
            return None, f"no verdict: the evaluation failed ({type(exc).__name__}: {exc})"


__all__ = ["Workers"]
