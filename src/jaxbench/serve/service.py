"""The service's core, without HTTP: accepting submissions, the queue, the workers that hand
them to an executor's evaluator, the verdict cache, and waking whoever waits for a verdict.

The HTTP layer (:mod:`jaxbench.serve.app`) only parses and answers; everything a submission
goes through is here, so the service behaves the same whatever calls it (the HTTP routes, the
OpenEnv environment, tests).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxbench.evaluator.common.schema import source_sha256
from jaxbench.executors import EvaluationLost, make_evaluator
from jaxbench.serve.auth import Principal
from jaxbench.serve.limits import QuotaWindows, Refusal, concurrency_refusal
from jaxbench.serve.metrics import Metrics
from jaxbench.serve.rewards import DEFAULT_TABLE, RewardTable, reward
from jaxbench.serve.store import Store, Submission, fingerprint

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
DEFAULT_MAX_SOURCE_BYTES = 256 * 1024
DEFAULT_MAX_BATCH = 256
DEFAULT_MAX_QUEUE = 100_000


class ServeError(Exception):
    """A request the service refuses: HTTP ``status``, a one-line message, extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass
class ServeConfig:
    """What a service is started with (``jaxbench serve``'s options)."""

    out: Path = Path("runs/serve")
    executor: str = "local"
    ray_address: str | None = None
    workers: int = 2
    default_mode: str = "auto"
    max_source_bytes: int = DEFAULT_MAX_SOURCE_BYTES
    max_batch: int = DEFAULT_MAX_BATCH
    max_queue: int = DEFAULT_MAX_QUEUE
    quota: int | None = None  # per caller and window, unless its token sets its own
    quota_window_s: float = 3600.0
    concurrency: int | None = None  # unfinished submissions per caller
    retries: int = 2  # evaluations that end without a verdict (harness errors, lost Ray nodes)
    cache: bool = True
    rewards: RewardTable = field(default_factory=lambda: DEFAULT_TABLE)


@dataclass
class Request:
    """One kernel to evaluate, as a caller asked for it."""

    task: str
    source: str
    target: str | None = None
    size: str = "small"
    chip: str | None = None
    mode: str | None = None
    trials: int = 3
    timeout_s: float | None = None
    id: str | None = None


class Service:
    """Accepts submissions, evaluates them on ``config.workers`` threads, persists everything.

    Thread-safe: the HTTP routes call it from the server's threads and event loop."""

    def __init__(self, config: ServeConfig, evaluator: Any | None = None) -> None:
        self.config = config
        self.store = Store(config.out)
        self.metrics = Metrics()
        self.quotas = QuotaWindows(config.quota_window_s)
        self._lock = threading.RLock()
        self._wakeup = threading.Condition(self._lock)
        self._queue: deque[str] = deque()
        self._subs: dict[str, Submission] = {}
        self._batches: dict[str, list[str]] = {}
        self._batch_owner: dict[str, str] = {}
        self._by_key: dict[tuple[Any, ...], str] = {}  # cache key -> the submission evaluating it
        self._followers: dict[str, list[str]] = {}  # that submission -> those waiting on it
        self._running: set[str] = set()
        self._unfinished: dict[str, int] = {}  # caller -> queued or running
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._sync_done = threading.Condition(self._lock)
        self._stopping = False
        self._evaluator = evaluator
        self._threads: list[threading.Thread] = []
        self._restore()

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
                           "resumed": sum(not s.finished_state for s in self._subs.values())})
        for index in range(self.config.workers):
            thread = threading.Thread(target=self._work, name=f"jaxbench-serve-worker-{index}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, grace_s: float = 5.0) -> None:
        """Stops taking work; evaluations in flight are aborted (their submissions stay queued
        in the run directory and are evaluated again after a restart)."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self._wakeup.notify_all()
            busy = bool(self._running)
        if busy and self._evaluator is not None:
            self._evaluator.abort()
        for thread in self._threads:
            thread.join(timeout=grace_s)
        if self._evaluator is not None:
            self._evaluator.close()
        try:
            self.store.record({"type": "serve_stop"})
        except OSError:
            pass

    def _restore(self) -> None:
        with self._lock:
            self._restore_locked()

    def _restore_locked(self) -> None:
        for sub in self.store.replay():
            self._subs[sub.id] = sub
            if sub.batch:
                self._batches.setdefault(sub.batch, []).append(sub.id)
                self._batch_owner.setdefault(sub.batch, sub.principal)
            if sub.state == "done" and sub.cached_from is None and sub.cache_key and self.config.cache:
                self._by_key.setdefault(sub.cache_key, sub.id)
        for sub in self._subs.values():
            if not sub.finished_state:
                self._route(sub, resumed=True)

    # -- accepting -------------------------------------------------------------------------------
    def _resolve_mode(self, mode: str, target: str) -> str:
        if self._evaluator is not None and hasattr(self._evaluator, "resolve_mode"):
            return self._evaluator.resolve_mode(mode, target)
        from jaxbench.backends import resolve_mode

        return resolve_mode(mode, target)

    def _prepare(self, request: Request, principal: Principal, batch: str | None) -> tuple[Submission, str]:
        """Checks one request (ServeError otherwise) and makes its submission (not yet kept)."""
        from jaxbench.evaluator import default_timeout, interpret_cost_problem, target_declaration
        from jaxbench.tasks import get_task

        size_bytes = len(request.source.encode("utf-8", "surrogatepass"))
        if size_bytes > self.config.max_source_bytes:
            raise ServeError(413, f"source of {size_bytes} bytes is over the limit of "
                                  f"{self.config.max_source_bytes} bytes")
        if "\x00" in request.source:
            raise ServeError(422, "the source holds a NUL character")
        # always text with a newline: the evaluator never reads a one-line ".py" source as a path
        source = request.source if request.source.endswith("\n") else request.source + "\n"
        if request.id is not None and not ID_PATTERN.match(request.id):
            raise ServeError(422, "id: 1-128 characters of A-Z a-z 0-9 _ . : - starting with a "
                                  "letter or digit")
        try:
            task = get_task(request.task)
        except KeyError as exc:
            raise ServeError(422, str(exc).strip("'\"")) from None
        declared, problem = target_declaration(source)
        if problem:
            raise ServeError(422, problem)
        if request.target not in (None, "tpu", "gpu"):
            raise ServeError(422, f"unknown target {request.target!r}; use tpu or gpu")
        if request.target and declared and request.target != declared:
            raise ServeError(422, f'target {request.target} contradicts the source\'s TARGET = '
                                  f'"{declared}"')
        target = request.target or declared or "tpu"
        if request.size not in task.sizes:
            raise ServeError(422, f"unknown size {request.size!r} for {task.id}; sizes: "
                                  f"{', '.join(task.sizes)}")
        mode = request.mode or self.config.default_mode
        try:
            resolved = self._resolve_mode(mode, target)
        except (RuntimeError, ValueError) as exc:
            raise ServeError(422, str(exc)) from None
        chip = None
        if request.chip:
            from jaxbench.backends import resolve_chip

            try:
                chip = resolve_chip(request.chip, target).device_kind
            except (KeyError, ValueError) as exc:
                raise ServeError(422, str(exc).strip("'\"")) from None
        if not 1 <= request.trials <= 20:
            raise ServeError(422, "trials: 1 to 20")
        if resolved == "interpret":
            problem = interpret_cost_problem(task, request.size, request.trials,
                                             request.timeout_s or default_timeout(task.id, "interpret"))
            if problem:
                raise ServeError(422, f"{problem}; submit size small or use a device")
        digest = source_sha256(source)
        fields = {"task": task.id, "target": target, "size": request.size, "chip": chip,
                  "mode": mode, "trials": request.trials, "timeout_s": request.timeout_s,
                  "source_sha256": digest}
        sub = Submission(id=request.id or uuid.uuid4().hex, principal=principal.name,
                         task=task.id, target=target, size=request.size, chip=chip, mode=mode,
                         resolved_mode=resolved, trials=request.trials,
                         timeout_s=request.timeout_s, source_sha256=digest, source_file="",
                         fingerprint=fingerprint(fields), batch=batch)
        return sub, source

    def submit(self, requests: list[Request], principal: Principal,
               batch_id: str | None = None,
               is_batch: bool = False) -> tuple[str | None, list[dict[str, Any]]]:
        """Accepts requests all together or none (ServeError): returns the batch id (for a
        batch) and one view per request. A request whose id is already known with the same
        fingerprint is that submission again (``duplicate``), never a second evaluation."""
        if not requests:
            raise ServeError(422, "no submissions")
        if len(requests) > self.config.max_batch:
            raise ServeError(413, f"{len(requests)} submissions in one batch; at most "
                                  f"{self.config.max_batch}")
        if batch_id is not None and not ID_PATTERN.match(batch_id):
            raise ServeError(422, "batch id: 1-128 characters of A-Z a-z 0-9 _ . : -")
        batch = (batch_id or uuid.uuid4().hex) if is_batch else None
        prepared = [self._prepare(r, principal, batch) for r in requests]
        ids = [sub.id for sub, _ in prepared]
        if len(set(ids)) != len(ids):
            raise ServeError(422, "the same id twice in one batch")
        with self._lock:
            if batch is not None and batch in self._batches:
                owner = self._batch_owner.get(batch)
                old = self._batches[batch]
                if owner != principal.name or old != ids:
                    raise ServeError(409, f"batch id {batch} is in use with other submissions")
            fresh: list[tuple[Submission, str]] = []
            views: list[dict[str, Any]] = []
            for sub, source in prepared:
                existing = self._subs.get(sub.id)
                if existing is not None:
                    if existing.principal != principal.name or existing.fingerprint != sub.fingerprint:
                        raise ServeError(409, f"id {sub.id} is in use by another submission")
                    continue
                fresh.append((sub, source))
            if self._stopping:
                raise ServeError(503, "the service is stopping", {"Retry-After": "5"})
            if len(self._queue) + len(fresh) > self.config.max_queue:
                self.metrics.refusal("503")
                raise ServeError(503, f"the queue is full ({len(self._queue)} waiting)",
                                 {"Retry-After": "10"})
            refusal = self._limits(principal, len(fresh))
            if refusal is not None:
                self.metrics.refusal("429")
                raise ServeError(429, refusal.message, {"Retry-After": str(refusal.retry_after_s)})
            for sub, source in fresh:
                sub.source_file = self.store.keep_source(source)
                self._subs[sub.id] = sub
                self.store.record_submission(sub)
                if batch is not None:
                    self._batches.setdefault(batch, []).append(sub.id)
                    self._batch_owner.setdefault(batch, principal.name)
                self._route(sub)
            fresh_ids = {sub.id for sub, _ in fresh}
            for sub, _ in prepared:
                view = self.view(self._subs[sub.id])
                if sub.id not in fresh_ids:
                    view["duplicate"] = True
                    self.metrics.submitted("duplicate")
                views.append(view)
        return batch, views

    def _limits(self, principal: Principal, count: int) -> Refusal | None:
        if count == 0:
            return None
        limit = principal.concurrency if principal.concurrency is not None else self.config.concurrency
        refusal = concurrency_refusal(principal.name, self._unfinished.get(principal.name, 0), count,
                                      limit, retry_after_s=2)
        if refusal is not None:
            return refusal
        quota = principal.quota if principal.quota is not None else self.config.quota
        return self.quotas.take(principal.name, count, quota)

    def _route(self, sub: Submission, resumed: bool = False) -> None:
        """A new (or resumed) submission: answered from the cache, attached to the same
        kernel's evaluation in progress, or queued. Called with the lock held."""
        key = sub.cache_key if self.config.cache else None
        origin = self._subs.get(self._by_key.get(key, "")) if key else None
        if origin is not None and origin.id != sub.id:
            if origin.state == "done":
                self._answer_from(sub, origin)
                self.metrics.submitted("cached")
                return
            if origin.state in ("queued", "running"):
                self._followers.setdefault(origin.id, []).append(sub.id)
                self._unfinished[sub.principal] = self._unfinished.get(sub.principal, 0) + 1
                self.metrics.submitted("cached")
                return
        if key:
            self._by_key[key] = sub.id
        self._queue.append(sub.id)
        self._unfinished[sub.principal] = self._unfinished.get(sub.principal, 0) + 1
        if not resumed:
            self.metrics.submitted("evaluate")
        self._wakeup.notify()

    def _answer_from(self, sub: Submission, origin: Submission) -> None:
        sub.result, sub.reward, sub.cached_from = origin.result, origin.reward, origin.id
        sub.state, sub.finished = "done", time.time()
        self.store.record_cached(sub)
        self._notify(sub.id)

    # -- evaluating ------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopping:
                    self._wakeup.wait()
                if self._stopping:
                    return
                sub = self._subs[self._queue.popleft()]
                sub.state = "running"
                sub.attempts += 1
                self._running.add(sub.id)
            self._evaluate(sub)

    def _evaluate(self, sub: Submission) -> None:
        started = time.monotonic()
        source = self.store.source(sub)
        error: str | None = None
        result: dict[str, Any] | None = None
        try:
            if source is None:
                raise RuntimeError(f"the source {sub.source_file} is missing from the run directory")
            result = self._evaluator.evaluate(source, sub.task, target=sub.target,
                                              mode=sub.resolved_mode, size=sub.size,
                                              trials=sub.trials, timeout_s=sub.timeout_s,
                                              chip=sub.chip)
        except EvaluationLost as exc:
            error = f"no verdict: {exc}"
        except Exception as exc:  # noqa: BLE001 - a harness error: retried, then reported
            error = f"no verdict: the evaluation failed ({type(exc).__name__}: {exc})"
        elapsed = time.monotonic() - started
        with self._lock:
            self._running.discard(sub.id)
            if self._stopping:  # aborted: not a verdict; queued again after a restart
                sub.state = "queued"
                return
            if result is None:
                if sub.attempts <= self.config.retries:
                    sub.state = "queued"
                    self._queue.appendleft(sub.id)
                    self._wakeup.notify()
                    return
                self._fail(sub, error or "no verdict")
                return
            result = dict(result)
            result.pop("kernel_file", None)  # "<kernel>": the source is in source_file
            sub.result = result
            sub.reward = reward(result, self.config.rewards)
            sub.state, sub.finished = "done", time.time()
            self.store.record_verdict(sub)
            self._finish(sub, elapsed)
            for follower_id in self._followers.pop(sub.id, []):
                follower = self._subs[follower_id]
                self._answer_from(follower, sub)
                self._finish(follower, None, verdict=False)  # answered, not evaluated

    def _fail(self, sub: Submission, message: str) -> None:
        sub.state, sub.error, sub.finished = "failed", message, time.time()
        self.store.record_failed(sub)
        self.metrics.failure()
        key = sub.cache_key
        if key and self._by_key.get(key) == sub.id:
            del self._by_key[key]
        self._finish(sub, None, verdict=False)
        for follower_id in self._followers.pop(sub.id, []):  # they get their own evaluation
            follower = self._subs[follower_id]
            self._unfinished[follower.principal] -= 1
            self._route(follower, resumed=True)

    def _finish(self, sub: Submission, evaluation_s: float | None, verdict: bool = True) -> None:
        self._unfinished[sub.principal] = max(0, self._unfinished.get(sub.principal, 0) - 1)
        if verdict and sub.result is not None:
            self.metrics.verdict(str(sub.result.get("status")),
                                 (sub.finished or time.time()) - sub.created, evaluation_s)
        self._notify(sub.id)

    # -- waiting ---------------------------------------------------------------------------------
    def _notify(self, sub_id: str) -> None:
        self._sync_done.notify_all()
        for loop, event in self._waiters.pop(sub_id, []):
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
            sub = self._subs.get(sub_id)
            if sub is None or sub.finished_state:
                return
            self._waiters.setdefault(sub_id, []).append((loop, event))
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            with self._lock:
                entries = self._waiters.get(sub_id, [])
                if (loop, event) in entries:
                    entries.remove((loop, event))

    def wait_sync(self, sub_id: str, timeout_s: float) -> dict[str, Any] | None:
        """Blocks until the submission has finished (its view) or ``timeout_s`` passed."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                sub = self._subs.get(sub_id)
                if sub is None:
                    return None
                left = deadline - time.monotonic()
                if sub.finished_state or left <= 0:
                    return self.view(sub)
                self._sync_done.wait(left)

    # -- reading ---------------------------------------------------------------------------------
    def get(self, sub_id: str, principal: Principal) -> dict[str, Any]:
        with self._lock:
            sub = self._subs.get(sub_id)
            if sub is None or sub.principal != principal.name:
                raise ServeError(404, f"no submission {sub_id}")
            return self.view(sub)

    def batch(self, batch_id: str, principal: Principal) -> list[str]:
        with self._lock:
            if batch_id not in self._batches or self._batch_owner.get(batch_id) != principal.name:
                raise ServeError(404, f"no batch {batch_id}")
            return list(self._batches[batch_id])

    def check_ids(self, ids: list[str], principal: Principal) -> None:
        with self._lock:
            for sub_id in ids:
                sub = self._subs.get(sub_id)
                if sub is None or sub.principal != principal.name:
                    raise ServeError(404, f"no submission {sub_id}")

    def finished(self, sub_id: str) -> bool:
        with self._lock:
            return self._subs[sub_id].finished_state

    def view(self, sub: Submission) -> dict[str, Any]:
        """What a caller sees of a submission."""
        out: dict[str, Any] = {
            "id": sub.id, "state": sub.state, "task": sub.task, "target": sub.target,
            "size": sub.size, "chip": sub.chip, "mode": sub.resolved_mode, "trials": sub.trials,
            "batch": sub.batch, "source_sha256": sub.source_sha256, "created": sub.created,
            "finished": sub.finished, "cached_from": sub.cached_from,
        }
        if sub.result is not None:
            out["status"] = sub.result.get("status")
            out["message"] = sub.result.get("message")
            out["result"] = sub.result
        if sub.reward is not None:
            out["reward"] = sub.reward
        elif sub.resolved_mode != "device":
            out["reward"] = {"value": None, "note": reward({"mode": sub.resolved_mode})["note"]}
        if sub.error is not None:
            out["error"] = sub.error
        return out

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"queue_length": len(self._queue), "in_flight": len(self._running),
                    "submissions": len(self._subs), "workers": self.config.workers,
                    "executor": self.config.executor, "stopping": self._stopping}

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
