"""The service's submissions in memory and what becomes of each: the index of submissions and
batches, the queue of those waiting for a worker, the verdict cache (a kernel already judged is
answered from its verdict; one being judged is followed, not evaluated again), the per-caller
count of unfinished submissions, and the outcomes (a verdict, a cached answer, a failure)
written to the store as they happen.

Not thread-safe by itself: :class:`~jaxbench.serve.state.ServiceState` owns the ledger and calls
it with its lock held, and nothing else holds it. The ledger takes no lock of its own; the
leaf locks of what it calls (the store's run directory, the metrics, the waiters) are taken
inside that lock.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, NotRequired, TypedDict

from jaxbench.contract import EvaluationResult, SubmissionState
from jaxbench.serve.auth import Principal
from jaxbench.serve.config import ServeConfig, ServeError
from jaxbench.serve.metrics import Metrics
from jaxbench.serve.rewards import Reward, RewardNote, pending_interpret, reward
from jaxbench.serve.store import Store, Submission
from jaxbench.serve.waiting import Waiters


class SubmissionView(TypedDict):
    """What a caller sees of a submission (``GET /v1/submissions/{id}``), in this process: the
    HTTP API answers it as JSON (the result as its event,
    :meth:`~jaxbench.contract.EvaluationResult.to_event`)."""

    id: str
    state: str
    task: str
    target: str
    size: str
    chip: str | None
    mode: str
    trials: int
    batch: str | None
    source_sha256: str
    created: float
    finished: float | None
    cached_from: str | None
    status: NotRequired[str]
    message: NotRequired[str]
    result: NotRequired[EvaluationResult]
    reward: NotRequired[Reward | RewardNote]
    error: NotRequired[str]
    duplicate: NotRequired[bool]


def view(sub: Submission) -> SubmissionView:
    """What a caller sees of a submission."""
    out: SubmissionView = {
        "id": sub.id, "state": sub.state, "task": sub.task, "target": sub.target,
        "size": sub.size, "chip": sub.chip, "mode": sub.resolved_mode, "trials": sub.trials,
        "batch": sub.batch, "source_sha256": sub.source_sha256, "created": sub.created,
        "finished": sub.finished, "cached_from": sub.cached_from,
    }
    if sub.result is not None:
        out["status"] = sub.result.status
        out["message"] = sub.result.message
        out["result"] = sub.result
    if sub.reward is not None:
        out["reward"] = sub.reward
    elif sub.resolved_mode != "device":
        out["reward"] = pending_interpret()
    if sub.error is not None:
        out["error"] = sub.error
    return out


class WorkQueue:
    """The submissions waiting for a worker, in order, and those being evaluated; once
    ``stopping``, none is handed out any more."""

    def __init__(self) -> None:
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

    def ready(self) -> bool:
        """Whether a worker has something to do: a submission to take, or to stop."""
        return bool(self._ids) or self.stopping

    def pop(self) -> str | None:
        """The next submission's id (it is then running); None when stopping or empty."""
        if self.stopping or not self._ids:
            return None
        sub_id = self._ids.popleft()
        self.running.add(sub_id)
        return sub_id


class Ledger:
    """Every submission by id, every batch by id, the queue, and the routing of a submission
    to the cache, to an evaluation in progress or to the queue. Tells ``waiters`` when a
    submission finishes."""

    def __init__(self, config: ServeConfig, store: Store, metrics: Metrics,
                 waiters: Waiters) -> None:
        self.config = config
        self.store = store
        self.metrics = metrics
        self.waiters = waiters
        self.queue = WorkQueue()
        self.subs: dict[str, Submission] = {}
        self.batches: dict[str, list[str]] = {}
        self.batch_owner: dict[str, str] = {}
        self._by_key: dict[tuple[Any, ...], str] = {}  # cache key -> the submission evaluating it
        self._followers: dict[str, list[str]] = {}  # that submission -> those waiting on it
        self._unfinished: dict[str, int] = {}  # caller -> queued or running

    # -- keeping ---------------------------------------------------------------------------------
    def restore(self, replayed: list[Submission]) -> None:
        """The submissions of the run directory; unfinished ones are routed again."""
        for sub in replayed:
            self.subs[sub.id] = sub
            if sub.batch:
                self._join_batch(sub.batch, sub.id, sub.principal)
            if sub.state == SubmissionState.DONE and sub.cached_from is None and sub.cache_key \
                    and self.config.cache:
                self._by_key.setdefault(sub.cache_key, sub.id)
        for sub in self.subs.values():
            if not sub.finished_state:
                self.route(sub, resumed=True)

    def check_batch(self, batch: str | None, principal: str, ids: list[str]) -> None:
        """A batch id already known is that batch again, only with the same caller and ids."""
        if batch is not None and batch in self.batches:
            if self.batch_owner.get(batch) != principal or self.batches[batch] != ids:
                raise ServeError(409, f"batch id {batch} is in use with other submissions")

    def known(self, sub: Submission) -> bool:
        """Whether ``sub`` is a submission already kept (a retry: same caller, same fingerprint);
        an id in use by another submission is a ServeError."""
        existing = self.subs.get(sub.id)
        if existing is None:
            return False
        if existing.principal != sub.principal or existing.fingerprint != sub.fingerprint:
            raise ServeError(409, f"id {sub.id} is in use by another submission")
        return True

    def add(self, sub: Submission) -> None:
        """Keeps a new submission (its source already kept) and routes it."""
        self.subs[sub.id] = sub
        self.store.record_submission(sub)
        if sub.batch is not None:
            self._join_batch(sub.batch, sub.id, sub.principal)
        self.route(sub)

    def _join_batch(self, batch: str, sub_id: str, principal: str) -> None:
        self.batches.setdefault(batch, []).append(sub_id)
        self.batch_owner.setdefault(batch, principal)

    def unfinished(self, principal: str) -> int:
        return self._unfinished.get(principal, 0)

    def _count(self, principal: str) -> None:
        self._unfinished[principal] = self._unfinished.get(principal, 0) + 1

    # -- routing ---------------------------------------------------------------------------------
    def route(self, sub: Submission, resumed: bool = False) -> None:
        """A new (or resumed) submission: answered from the cache, attached to the same
        kernel's evaluation in progress, or queued."""
        key = sub.cache_key if self.config.cache else None
        origin = self.subs.get(self._by_key.get(key, "")) if key else None
        if origin is not None and origin.id != sub.id:
            if origin.state == SubmissionState.DONE:
                self._answer_from(sub, origin)
                self.metrics.submitted("cached")
                return
            if origin.state in (SubmissionState.QUEUED, SubmissionState.RUNNING):
                self._followers.setdefault(origin.id, []).append(sub.id)
                self._count(sub.principal)
                self.metrics.submitted("cached")
                return
        if key:
            self._by_key[key] = sub.id
        self.queue.push(sub.id)
        self._count(sub.principal)
        if not resumed:
            self.metrics.submitted("evaluate")

    def _answer_from(self, sub: Submission, origin: Submission) -> None:
        sub.result, sub.reward, sub.cached_from = origin.result, origin.reward, origin.id
        sub.state, sub.finished = SubmissionState.DONE, time.time()
        self.store.record_cached(sub)
        self.waiters.notify(sub.id)

    # -- evaluating ------------------------------------------------------------------------------
    def start_next(self) -> Submission | None:
        """The next queued submission, now running (None when stopping or none is queued)."""
        sub_id = self.queue.pop()
        if sub_id is None:
            return None
        sub = self.subs[sub_id]
        sub.state = SubmissionState.RUNNING
        sub.attempts += 1
        return sub

    def settle(self, sub: Submission, result: EvaluationResult | None, error: str | None,
               evaluation_s: float) -> None:
        """The end of an evaluation of ``sub``: its verdict; or, without one, queued again at
        the front up to ``config.retries`` times, then failed. While stopping it is neither
        (aborted, it stays queued in the run directory and is evaluated after a restart)."""
        self.queue.running.discard(sub.id)
        if self.queue.stopping:
            sub.state = SubmissionState.QUEUED
        elif result is not None:
            self.verdict(sub, result, evaluation_s)
        elif sub.attempts <= self.config.retries:
            sub.state = SubmissionState.QUEUED
            self.queue.push(sub.id, front=True)
        else:
            self.fail(sub, error or "no verdict")

    # -- outcomes --------------------------------------------------------------------------------
    def verdict(self, sub: Submission, result: EvaluationResult, evaluation_s: float) -> None:
        """The evaluator's verdict on ``sub``: kept with its reward, and given to the
        submissions that followed it (the same result: it is frozen)."""
        sub.result = result.replace(kernel_file=None)  # "<kernel>": the source is in source_file
        sub.reward = reward(result, self.config.rewards)
        sub.state, sub.finished = SubmissionState.DONE, time.time()
        self.store.record_verdict(sub)
        self._finish(sub, evaluation_s)
        for follower_id in self._followers.pop(sub.id, []):
            follower = self.subs[follower_id]
            self._answer_from(follower, sub)
            self._finish(follower, None, verdict=False)  # answered, not evaluated

    def fail(self, sub: Submission, message: str) -> None:
        """``sub`` ended without a verdict; those that followed it get their own evaluation."""
        sub.state, sub.error, sub.finished = SubmissionState.FAILED, message, time.time()
        self.store.record_failed(sub)
        self.metrics.failure()
        key = sub.cache_key
        if key and self._by_key.get(key) == sub.id:
            del self._by_key[key]
        self._finish(sub, None, verdict=False)
        for follower_id in self._followers.pop(sub.id, []):
            follower = self.subs[follower_id]
            self._unfinished[follower.principal] -= 1
            self.route(follower, resumed=True)

    def _finish(self, sub: Submission, evaluation_s: float | None, verdict: bool = True) -> None:
        self._unfinished[sub.principal] = max(0, self._unfinished.get(sub.principal, 0) - 1)
        if verdict and sub.result is not None:
            self.metrics.verdict(sub.result.status,
                                 (sub.finished or time.time()) - sub.created, evaluation_s)
        self.waiters.notify(sub.id)

    # -- reading ---------------------------------------------------------------------------------
    def owned(self, sub_id: str, principal: Principal) -> Submission:
        """The caller's submission ``sub_id`` (404 for another caller's, as for none)."""
        sub = self.subs.get(sub_id)
        if sub is None or sub.principal != principal.name:
            raise ServeError(404, f"no submission {sub_id}")
        return sub

    def batch_ids(self, batch_id: str, principal: Principal) -> list[str]:
        if batch_id not in self.batches or self.batch_owner.get(batch_id) != principal.name:
            raise ServeError(404, f"no batch {batch_id}")
        return list(self.batches[batch_id])


__all__ = ["Ledger", "SubmissionView", "WorkQueue", "view"]
