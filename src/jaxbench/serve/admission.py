"""Admission: whether the service takes a request, before anything is kept or queued.

A request is checked field by field (source size and content, id, task, target, size, mode,
chip, trials, the interpret-mode cost) and made into a :class:`~jaxbench.serve.store.Submission`;
a batch is checked as a whole (count, id); and a caller's quota and concurrency cap decide
whether the new submissions fit (:mod:`jaxbench.serve.limits`). Every refusal is a
:class:`~jaxbench.serve.config.ServeError` carrying its HTTP status.
"""

from __future__ import annotations

import uuid

from jaxbench.contract import Settings, source_sha256
from jaxbench.executors import EvaluatorLike, SupportsResolveMode
from jaxbench.serve.auth import Principal
from jaxbench.serve.config import ID_PATTERN, Request, ServeConfig, ServeError
from jaxbench.serve.limits import QuotaWindows, Refusal, concurrency_refusal
from jaxbench.serve.store import Submission, fingerprint


class Admission:
    """The checks a request passes and the per-caller limits (one quota window per caller)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.quotas = QuotaWindows(config.quota_window_s)

    def batch_of(self, requests: list[Request], batch_id: str | None, is_batch: bool) -> str | None:
        """Checks the number of requests and the batch id; the batch's id (drawn when absent),
        or None for a single submission."""
        if not requests:
            raise ServeError(422, "no submissions")
        if len(requests) > self.config.max_batch:
            raise ServeError(413, f"{len(requests)} submissions in one batch; at most "
                                  f"{self.config.max_batch}")
        if batch_id is not None and not ID_PATTERN.match(batch_id):
            raise ServeError(422, "batch id: 1-128 characters of A-Z a-z 0-9 _ . : -")
        return (batch_id or uuid.uuid4().hex) if is_batch else None

    def resolve_mode(self, mode: str, target: str, evaluator: object) -> str:
        """``mode`` for ``target`` where the evaluator runs (a Ray cluster), else here."""
        if isinstance(evaluator, SupportsResolveMode):
            return evaluator.resolve_mode(mode, target)
        from jaxbench.backends import resolve_mode

        return resolve_mode(mode, target)

    def prepare(self, request: Request, principal: Principal, batch: str | None,
                evaluator: EvaluatorLike | None = None) -> tuple[Submission, str]:
        """Checks one request (ServeError otherwise) and makes its submission (not yet kept)."""
        from jaxbench.evaluator import interpret_cost_problem, resolve_case
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
        if request.size not in task.sizes:
            raise ServeError(422, f"unknown size {request.size!r} for {task.id}; sizes: "
                                  f"{', '.join(task.sizes)}")
        if not 1 <= request.trials <= 20:
            raise ServeError(422, "trials: 1 to 20")
        mode = request.mode or self.config.default_mode
        try:  # the evaluator's own resolver, as each evaluation will resolve it
            case = resolve_case(task, Settings.of(
                target=request.target, mode=mode, size=request.size, trials=request.trials,
                timeout_s=request.timeout_s, chip=request.chip), source, front_door=True,
                mode_of=lambda asked, target: self.resolve_mode(asked, target, evaluator))
        except (RuntimeError, ValueError, KeyError) as exc:
            raise ServeError(422, str(exc).strip("'\"")) from None
        target, resolved = str(case.target), str(case.mode)
        chip = self._chip(request.chip, target)  # as asked (None: the evaluation's default)
        if resolved == "interpret":
            problem = interpret_cost_problem(task, request.size, request.trials, case.timeout_s)
            if problem:
                raise ServeError(422, f"{problem}; submit size small or use a device")
        digest = source_sha256(source)
        fields = {"task": task.id, "target": target, "size": request.size, "chip": chip,
                  "mode": mode, "trials": request.trials, "timeout_s": request.timeout_s,
                  "source_sha256": digest}
        # the case's settings, resolved once here and carried to the evaluator as they are
        settings = case.settings.replace(target=case.target, mode=case.mode, chip=chip,
                                         fresh_keys=True)
        sub = Submission(id=request.id or uuid.uuid4().hex, principal=principal.name,
                         task=task.id, mode=mode, settings=settings, source_sha256=digest,
                         source_file="", fingerprint=fingerprint(fields), batch=batch)
        return sub, source

    @staticmethod
    def _chip(name: str | None, target: str) -> str | None:
        """The device kind of the chip a request names (None when it names none)."""
        if not name:
            return None
        from jaxbench.backends import resolve_chip

        try:
            return resolve_chip(name, target).device_kind
        except (KeyError, ValueError) as exc:
            raise ServeError(422, str(exc).strip("'\"")) from None

    def refusal(self, principal: Principal, count: int, unfinished: int) -> Refusal | None:
        """Why ``count`` new submissions of a caller with ``unfinished`` queued or running ones
        do not fit its concurrency cap or its quota (the quota counts them when they fit)."""
        if count == 0:
            return None
        limit = principal.concurrency if principal.concurrency is not None else self.config.concurrency
        refusal = concurrency_refusal(principal.name, unfinished, count, limit, retry_after_s=2)
        if refusal is not None:
            return refusal
        quota = principal.quota if principal.quota is not None else self.config.quota
        return self.quotas.take(principal.name, count, quota)


__all__ = ["Admission"]
