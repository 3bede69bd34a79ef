"""What each phase of an evaluation found: one frozen report per phase, and the :class:`Walk`
that holds them.

A phase (:class:`jaxbench.evaluator.parent.evaluation.Evaluation`) returns its report, or
raises a :class:`~jaxbench.contract.StageFailure` where it found nothing else; a phase that
found something before it failed returns its report with the ``failure``. The walk keeps each
report once, the failures, the stages passed (:class:`Stages`) and where the time went;
:func:`jaxbench.evaluator.parent.assemble.assemble` turns them into the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from jaxbench.contract import Failure, JudgeResponse
from jaxbench.evaluator.parent.figures import TimingSummary


class Stages:
    """The stages and steps an evaluation went through, in the order first reached, each with
    its details (seconds, notes, figures): the result's ``stages``. The last one reached is
    the last passed: a crash is blamed on the stage after it."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Any]] = {}

    def note(self, name: str, details: Mapping[str, Any]) -> None:
        """``details`` added to stage ``name`` (reached now, if it was not yet)."""
        self._entries.setdefault(name, {}).update(details)

    def last(self) -> str | None:
        return next(reversed(self._entries), None)

    def of(self, name: str) -> Mapping[str, Any]:
        return self._entries.get(name, {})

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {name: dict(details) for name, details in self._entries.items()}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Report:
    """A phase's report: ``failure`` when the phase failed after finding what the rest says."""

    failure: Failure | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Checked(Report):
    """``policy``: the static policy passed (it reports nothing else)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Traced(Report):
    """``untrusted``: what the parent saw of the tracer (its isolation and seal, checked
    before any candidate code ran) and what the tracer left: the candidate's frames and
    printed output (shown, never believed), the hand-over and a debug run's outputs."""

    isolation: str = "unknown"
    sealed: str = "none"
    warnings: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()
    output: str | None = None
    handover: bytes | None = None
    probe: Mapping[str, list[Any]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Compared(Report):
    """Outputs against the float32 truth: the tolerance, the worst errors of the outputs
    compared (None where one was not finite, or none was compared) and the interpreters'
    races the outputs survived."""

    tolerance: Mapping[str, float] | None = None
    max_abs_err: float | None = None
    rel_err: float | None = None
    tol_fraction: float | None = None
    warnings: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Debugged(Report):
    """``debug``: the untrusted side's own run against the truth (never a verdict that
    counts)."""

    compared: Compared | None = None
    trials: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Judged(Report):
    """``judge``: the trusted runner's response once it ran the trials, the first memory
    budget the kernel breaks at some size, the outputs and truths it streamed back, and
    ``judged_on`` where the judge's own run found the kernel wrong."""

    response: JudgeResponse | None = None
    budget: Failure | None = None
    outputs: Mapping[str, list[Any]] = dataclasses.field(default_factory=dict)
    truths: Mapping[str, list[Any]] = dataclasses.field(default_factory=dict)
    judged_on: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class TritonCompiled(Report):
    """Triton's compile for the chip (:func:`jaxbench.evaluator.parent.chip_checks.
    triton_compiled`): its report or why it was skipped, its warnings and tool faults, what
    it adds to ``lowering_fidelity``, and whether it decided every kernel's shared memory."""

    triton_compile: dict[str, Any] | str | None = None
    warnings: tuple[str, ...] = ()
    tool_faults: tuple[dict[str, str], ...] = ()
    fidelity_notes: str = ""
    decided: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChipChecked(Report):
    """``chip``: the chip's features and Triton's compile checked, and, once they passed, the
    judge's response taken (``responded``): its warnings (uncertain VMEM and shared memory,
    the tools' crashes), what ``lower`` proved, the artifacts saved."""

    kernel_backend: str | None = None
    lowering_fidelity: str | None = None  # None: the case's own
    triton: TritonCompiled | None = None
    smem_uncertain: tuple[dict[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    tool_faults: tuple[dict[str, str], ...] = ()
    artifacts: Mapping[str, Any] | None = None
    responded: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class Vouched(Report):
    """``vouch``: what vouches for the outputs (``judged_on``), the runs to compare (label,
    key) and their outputs, or, where nothing could run the kernel here, the Mosaic GPU
    interpreter's comparison (it can find the kernel wrong, no more)."""

    judged_on: str | None = None
    judged: tuple[tuple[str, list[int]], ...] = ()
    outputs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    compared: Compared | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Timed(Report):
    """``figures``: the figures from the judge's timing samples (device mode), the roofline
    fraction and the chip's peaks, and the trials run."""

    figures: TimingSummary | None = None
    roofline_fraction: float | None = None
    peak_flops: float | None = None
    peak_bytes_per_s: float | None = None
    trials: int | None = None


@dataclasses.dataclass(frozen=True)
class Spans:
    """Where an evaluation's wall went: its seconds and their spans (``spans_of``)."""

    wall_s: float
    spans: Mapping[str, float]


R = TypeVar("R", bound=Report)


@dataclasses.dataclass
class Walk:
    """One evaluation's walk: what it was given (``source``, ``filename``, the ``nonce`` of
    fresh keys, when it started), each phase's report, set once, the failures, the stages
    passed, and each phase's seconds and measured parts."""

    source: str
    filename: str
    nonce: str | None
    started_at: float
    stages: Stages = dataclasses.field(default_factory=Stages)
    failures: dict[str, Failure] = dataclasses.field(default_factory=dict)
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    parts: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    reports: dict[str, Report] = dataclasses.field(default_factory=dict)

    def keep(self, phase: str, report: Report) -> None:
        """``report`` as ``phase``'s (once), and its failure."""
        if phase in self.reports:
            raise RuntimeError(f"phase {phase!r} reported twice")
        self.reports[phase] = report
        if report.failure is not None:
            self.failures[phase] = report.failure

    def report(self, phase: str, kind: type[R]) -> R | None:
        """``phase``'s report, of its ``kind``; None where the phase did not report."""
        found = self.reports.get(phase)
        return found if isinstance(found, kind) else None

    @property
    def traced(self) -> Traced | None:
        return self.report("untrusted", Traced)

    @property
    def debugged(self) -> Debugged | None:
        return self.report("debug", Debugged)

    @property
    def judged(self) -> Judged | None:
        return self.report("judge", Judged)

    @property
    def chip(self) -> ChipChecked | None:
        return self.report("chip", ChipChecked)

    @property
    def vouched(self) -> Vouched | None:
        return self.report("vouch", Vouched)

    @property
    def compared(self) -> Compared | None:
        return self.report("compare", Compared)

    @property
    def timed(self) -> Timed | None:
        return self.report("figures", Timed)

    @property
    def response(self) -> JudgeResponse | None:
        """The trusted runner's response, once it ran the trials."""
        judged = self.judged
        return judged.response if judged else None

    @property
    def budget(self) -> Failure | None:
        judged = self.judged
        return judged.budget if judged else None
