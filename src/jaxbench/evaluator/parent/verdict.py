"""The verdict: a pure function of what the evaluation's phases reported.

Each phase of :class:`jaxbench.evaluator.parent.evaluation.Evaluation` reports a
:class:`~jaxbench.contract.Failure` or none (it passed); the judge's
phase may also report the first memory budget a kernel breaks at some size. :func:`decide`
turns these failures (:class:`Reports`) into one verdict, with no process, file or clock involved (tests drive
it exhaustively on fixtures: tests/test_verdict.py).

The order of precedence:

1. the static policy, then the untrusted side (its failures and its death);
2. the judge's structure rules (a failure at ``lower``);
3. a memory budget the kernel breaks at some size: the chip would refuse it, whatever the
   judge's trials then said;
4. the rest of the judge's checks, then the chip's features and Triton's compiler, then what
   vouches for the outputs, the comparison with the truth, the timing;
5. otherwise ``correct``, at the last stage passed.

A failure at ``trace`` or ``lower`` of a kernel that looks written for the other platform
(its imports) says so first; at ``lower`` that hint stands alone (the lowering error is only
its consequence), and a crash of the lowering tool on such a kernel is that kernel's
``compile_error``, not ``unverified``.
"""

from __future__ import annotations

import dataclasses

from jaxbench.contract import Failure, Rule, Stage, Status

# The phases, in the order the evaluation walks them and the verdict reads them.
PHASES = ("policy", "untrusted", "judge", "chip", "vouch", "compare", "figures")


@dataclasses.dataclass(frozen=True)
class Reports:
    """What each phase reported: its failure, or None when it passed (or never ran)."""

    failures: dict[str, Failure] = dataclasses.field(default_factory=dict)
    budget: Failure | None = None  # the judge's first budget problem at some size
    last_stage: Stage = Stage.CORRECT  # the last stage a passing evaluation went through
    target_hint: str = ""  # static.wrong_target_hint: the kernel's imports against its target
    other_platform: bool = False  # the hint says it is written for the other platform
    frame: str = ""  # the candidate's innermost frame, as the tracer named it


@dataclasses.dataclass(frozen=True)
class Verdict:
    status: Status
    stage: Stage
    rule: Rule | None
    message: str


def first_failure(reports: Reports) -> Failure | None:
    """The failure that decides, by the precedence in the module's docstring."""
    failures = reports.failures
    for phase in PHASES[:2]:
        if phase in failures:
            return failures[phase]
    judge = failures.get("judge")
    if judge is not None and judge.stage == Stage.LOWER:
        return judge
    if reports.budget is not None:
        return reports.budget
    for phase in PHASES[2:]:
        if phase in failures:
            return failures[phase]
    return None


def decide(reports: Reports) -> Verdict:
    failure = first_failure(reports)
    if failure is None:
        return Verdict(Status.CORRECT, reports.last_stage, None, "")
    status, rule, message = failure.status, failure.rule, failure.message
    hint = reports.target_hint
    if hint and failure.stage in (Stage.TRACE, Stage.LOWER):
        crashed_on_other = (status == Status.UNVERIFIED and reports.other_platform
                            and failure.stage == Stage.LOWER and rule == Rule.TOOL_FAULT)
        if crashed_on_other:
            status, rule = Status.COMPILE_ERROR, Rule.WRONG_TARGET
        if status == Status.COMPILE_ERROR:
            alone = failure.stage == Stage.LOWER and reports.other_platform
            message = hint if alone else f"{hint}; {message}"
    if reports.frame:  # where in the kernel file it went wrong
        message += f" (at {reports.frame.split(': ', 1)[0]})"
    return Verdict(status, failure.stage, rule, message)
