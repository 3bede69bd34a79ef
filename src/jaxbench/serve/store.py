"""The service's history on disk: one run directory (docs/run-directory.md) that ``jaxbench
report`` and ``jaxbench export`` read like any run's.

Besides the ``evaluation`` events every run has (the result's event,
:meth:`~jaxbench.contract.EvaluationResult.to_event`, with ``submission``, ``reward``,
``principal``, ``job`` = ``serve|<id>``, ``kind`` = ``serve``, ``source_file`` and
``finished``; read back with :meth:`~jaxbench.contract.EvaluationResult.read`), the service
writes:

- ``serve_submission``: an accepted submission (id, caller's name, task, target, size, chip,
  requested and resolved mode, trials, timeout, ``source_file``, ``source_sha256``, batch,
  ``fingerprint`` of the request), before it is queued;
- ``serve_cached``: a submission answered by an earlier one's verdict (``cached_from``);
- ``serve_failed``: a submission that ended without a verdict (the harness failed on every
  attempt; never a verdict, never a reward);
- ``serve_start`` / ``serve_stop``.

Every line is fsynced before the answer goes out (``RunDir.append``), so a service killed at
any moment restarts from the file: submissions without an outcome are queued again in their
order, finished ones are served from it. Reports skip the ``serve_*`` events.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from jaxbench.contract import FIELD_TIME, EvaluationResult, Settings, SubmissionState
from jaxbench.contract.result import EVENT_TYPE
from jaxbench.runs import RunDir, event_source, read_events
from jaxbench.serve.rewards import Reward

CONFIG = {"command": "serve"}  # a service's run directory: resumed by every restart
SUBMISSION, CACHED, FAILED = "serve_submission", "serve_cached", "serve_failed"
START, STOP = "serve_start", "serve_stop"
# The request fields a submission's fingerprint covers: a retried id must repeat them.
FINGERPRINT_FIELDS = ("task", "target", "size", "chip", "mode", "trials", "timeout_s",
                      "source_sha256")
# The key RunDir.append stamps every event with (when it was written).
WRITTEN = FIELD_TIME
# What a verdict's event holds besides the evaluation's result (record_verdict's keys).
VERDICT_KEYS = frozenset({"type", WRITTEN, "submission", "principal", "job", "kind", "reward",
                          "finished", "source_file"})


def _finished(event: Mapping[str, Any]) -> Any:
    """When an outcome's event says its submission finished (else when it was written)."""
    return event.get("finished", event.get(WRITTEN))


class SubmissionEvent(TypedDict):
    """A ``serve_submission`` event, as :meth:`Submission.event` writes it."""

    type: Literal["serve_submission"]
    submission: str
    principal: str
    task: str
    target: str
    size: str
    chip: str | None
    mode: str
    resolved_mode: str
    trials: int
    timeout_s: float | None
    source_sha256: str
    source_file: str
    fingerprint: str
    batch: str | None
    created: float


@dataclass
class Submission:
    """One submitted kernel and what became of it. ``settings``: the evaluation's
    :class:`~jaxbench.contract.Settings` as admission resolved them (target, mode, chip; fresh
    trial keys), handed to the evaluator as they are; ``mode``: the mode asked for. ``state``:
    queued, running, done (a verdict, possibly ``cached_from`` another submission) or failed
    (no verdict)."""

    id: str
    principal: str
    task: str
    mode: str  # as asked for
    settings: Settings
    source_sha256: str
    source_file: str
    fingerprint: str
    batch: str | None = None
    created: float = field(default_factory=time.time)
    state: SubmissionState = SubmissionState.QUEUED
    result: EvaluationResult | None = None
    reward: Reward | None = None
    cached_from: str | None = None
    error: str | None = None
    finished: float | None = None
    attempts: int = 0

    @property
    def target(self) -> str:
        return str(self.settings.target)

    @property
    def size(self) -> str:
        return self.settings.size

    @property
    def chip(self) -> str | None:
        return self.settings.chip

    @property
    def resolved_mode(self) -> str:  # interpret or device
        return str(self.settings.mode)

    @property
    def trials(self) -> int:
        return self.settings.trials

    @property
    def timeout_s(self) -> float | None:
        return self.settings.timeout_s

    @property
    def cache_key(self) -> tuple[Any, ...] | None:
        """What a verdict is reused by: only in interpret mode, where no timing varies."""
        if self.resolved_mode != "interpret":
            return None
        return (self.task, self.target, self.size, self.chip or "", self.resolved_mode,
                self.trials, self.source_sha256)

    @property
    def finished_state(self) -> bool:
        return self.state in (SubmissionState.DONE, SubmissionState.FAILED)

    def event(self) -> SubmissionEvent:
        return {"type": "serve_submission", "submission": self.id, "principal": self.principal,
                "task": self.task, "target": self.target, "size": self.size, "chip": self.chip,
                "mode": self.mode, "resolved_mode": self.resolved_mode, "trials": self.trials,
                "timeout_s": self.timeout_s, "source_sha256": self.source_sha256,
                "source_file": self.source_file, "fingerprint": self.fingerprint,
                "batch": self.batch, "created": self.created}

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> Submission:
        """The submission of a ``serve_submission`` event as read back (KeyError when one of
        its fields is missing)."""
        return cls(id=event["submission"], principal=event["principal"], task=event["task"],
                   mode=event["mode"], settings=settings_for(
                       target=event["target"], mode=event["resolved_mode"],
                       size=event["size"], trials=event["trials"],
                       timeout_s=event.get("timeout_s"), chip=event.get("chip")),
                   source_sha256=event["source_sha256"], source_file=event["source_file"],
                   fingerprint=event["fingerprint"], batch=event.get("batch"),
                   created=event.get("created", event.get(WRITTEN, time.time())))


def settings_for(**resolved: Any) -> Settings:
    """A submission's settings from what admission resolved: fresh trial keys per evaluation
    (a caller reads each verdict before resubmitting)."""
    return Settings.of(**resolved, fresh_keys=True)


def fingerprint(fields: Mapping[str, object]) -> str:
    """SHA-256 of the request fields that define a submission."""
    canonical = json.dumps({k: fields.get(k) for k in FINGERPRINT_FIELDS}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


class Store:
    """The run directory behind a service."""

    def __init__(self, path: str | Path) -> None:
        self.run = RunDir.open(Path(path), dict(CONFIG))
        self.path = self.run.path

    @property
    def secret(self) -> bytes:
        return self.run.secret

    def keep_source(self, source: str) -> str:
        return self.run.keep_source(source)

    def source(self, submission: Submission) -> str | None:
        return event_source(self.path, {"source_file": submission.source_file})

    def record_submission(self, submission: Submission) -> None:
        self.run.append({**submission.event()})

    def record_verdict(self, submission: Submission) -> None:
        """The submission's verdict: its result's ``evaluation`` event with the service's keys
        (:data:`VERDICT_KEYS`)."""
        assert submission.result is not None
        self.run.append(submission.result.to_event(
            submission=submission.id, principal=submission.principal,
            job=f"serve|{submission.id}", kind="serve", source_file=submission.source_file,
            reward=submission.reward, finished=submission.finished))

    def record_cached(self, submission: Submission) -> None:
        self.run.append({"type": CACHED, "submission": submission.id,
                         "cached_from": submission.cached_from, "finished": submission.finished})

    def record_failed(self, submission: Submission) -> None:
        self.run.append({"type": FAILED, "submission": submission.id, "message": submission.error,
                         "finished": submission.finished})

    def record_start(self, executor: str, workers: int, resumed: int) -> None:
        self.run.append({"type": START, "executor": executor, "workers": workers,
                         "resumed": resumed})

    def record_stop(self) -> None:
        """A clean stop: the stop event, then the end of this segment of the run, which reveals
        its secret (a restart resumes with a fresh one)."""
        self.run.append({"type": STOP})
        self.run.interrupt()

    def replay(self) -> list[Submission]:
        """Every submission in the order it was accepted, with its outcome when it has one.
        An evaluation whose submission lacks a ``serve_submission`` (a torn write) is ignored;
        a cached answer is filled from its origin's verdict."""
        submissions: dict[str, Submission] = {}
        cached: list[tuple[str, str, float]] = []
        for event in read_events(self.path):
            kind = event.get("type")
            try:
                if kind == SUBMISSION:
                    submissions.setdefault(event["submission"], Submission.from_event(event))
                elif kind == EVENT_TYPE and event.get("submission") in submissions:
                    sub = submissions[event["submission"]]
                    sub.result = EvaluationResult.read(
                        {k: v for k, v in event.items() if k not in VERDICT_KEYS})
                    sub.reward = event.get("reward")
                    sub.state, sub.finished = SubmissionState.DONE, _finished(event)
                elif kind == CACHED and event.get("submission") in submissions:
                    cached.append((event["submission"], event.get("cached_from"), _finished(event)))
                elif kind == FAILED and event.get("submission") in submissions:
                    sub = submissions[event["submission"]]
                    sub.state, sub.error = SubmissionState.FAILED, event.get("message")
                    sub.finished = _finished(event)
            except (KeyError, TypeError, ValueError):
                continue  # a line someone else wrote: skipped, as the reports skip it
        for sub_id, origin_id, when in cached:
            origin = submissions.get(origin_id or "")
            sub = submissions[sub_id]
            if origin is not None and origin.state == SubmissionState.DONE \
                    and sub.state == SubmissionState.QUEUED:
                sub.result, sub.reward = origin.result, origin.reward
                sub.state, sub.cached_from, sub.finished = SubmissionState.DONE, origin.id, when
        return list(submissions.values())


__all__ = ["CACHED", "CONFIG", "FAILED", "FINGERPRINT_FIELDS", "START", "STOP", "SUBMISSION", "Store",
           "Submission", "SubmissionEvent", "fingerprint"]
