"""One evaluation, as the parent walks it: named phases, each returning its report
(:mod:`jaxbench.evaluator.parent.reports`).

:class:`Evaluation` is made per :meth:`jaxbench.evaluator.Evaluator.evaluate` call, given what
it uses of the evaluator (:class:`Means`: the tracers, the judge, the truths, the secret),
which keeps what outlives it. The phases, in order
(:data:`jaxbench.evaluator.parent.verdict.PHASES`):

``policy``  the static policy on the source (parsing only);
``untrusted`` a fresh isolated tracer traces the kernel at every size and hands the jaxprs
            over; of what it leaves, only its failures and its death are believed;
``judge``   a trusted runner reads the hand-over, lowers it, applies every rule, runs the
            trials (and times them on a device); its response, and the first memory budget
            the kernel breaks at some size;
``chip``    the chip's features and Triton's compiler for the chip (where installed), then the
            response taken;
``vouch``   what vouches for the outputs: the judge's own run of the exported module, or, where
            none could run here, nothing (``unverified``);
``compare`` the outputs against the float32 truth;
``figures`` the figures from the judge's timings (device mode).

A phase that fails ends the walk; :func:`jaxbench.evaluator.parent.verdict.decide` then turns
the failures into the verdict, and :func:`jaxbench.evaluator.parent.assemble.assemble` the
reports and the verdict into the result.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from jaxbench.backends.peaks import peak_for, roofline_fraction
from jaxbench.contract import (
    RULES,
    STAGES,
    Failure,
    JudgeRequest,
    JudgeResponse,
    Rule,
    Stage,
    StageFailure,
    Status,
)
from jaxbench.contract.result import EvaluationResult
from jaxbench.evaluator.parent.assemble import SPEEDUP_REVIEW_THRESHOLD, TRUSTED_EXPORT, assemble, spans_of
from jaxbench.evaluator.parent.case import Case
from jaxbench.evaluator.parent.chip_checks import chip_checked
from jaxbench.evaluator.parent.compare import (
    GroundTruth,
    TimedTruth,
    Verdict,
    check_outputs,
    derive_keys,
    evaluation_inputs,
)
from jaxbench.evaluator.parent.figures import summarize
from jaxbench.evaluator.parent.judge_client import RunnerOutcome, ran, read_response
from jaxbench.evaluator.parent.pool import TracerPool, remove_tree
from jaxbench.evaluator.parent.reports import (
    Checked,
    ChipChecked,
    Compared,
    Debugged,
    Judged,
    Report,
    Spans,
    Timed,
    Traced,
    Vouched,
    Walk,
)
from jaxbench.evaluator.parent.requests import (
    RACE_CHECKS,
    Keys,
    chip_decided,
    judge_parts,
    judge_request,
    read_outputs,
    tracer_job,
)
from jaxbench.evaluator.parent.static import MISMATCH_HINT, check_source, wrong_target_hint
from jaxbench.evaluator.parent.untrusted import HANDOVER, HANDOVER_STEP, next_stage, traced
from jaxbench.evaluator.parent.verdict import PHASES, Reports, decide
from jaxbench.tasks.spec import Task

__all__ = ["SPEEDUP_REVIEW_THRESHOLD", "Evaluation", "Means"]
Truth = Callable[[Task, str, list[int]], list[object]]
Outputs = Mapping[str, object]  # label -> a run's arrays, or its verdict decided on the chip


@dataclasses.dataclass(frozen=True)
class Means:
    """What an evaluation uses of its evaluator: the tracers (a debug run's apart), the judge
    (a trusted runner, or on a device the chip's owner), the runners' warm-up, the truths'
    prefetch, the run's secret and the float32 truths."""

    tracers: Callable[[bool], TracerPool]
    judge: Callable[[dict[str, object], Case], RunnerOutcome]
    prestart: Callable[[], None]
    prefetch: Callable[[Task, str, list[list[int]]], None]
    secret: bytes
    truth: GroundTruth


class Evaluation:
    """One candidate through the phases; :meth:`run` returns the :class:`EvaluationResult`
    assembled from their reports."""

    def __init__(self, means: Means, case: Case, source: str, filename: str) -> None:
        self.means, self.case = means, case
        self.source, self.filename = source, filename
        nonce, self.secret, self.truth = evaluation_inputs(means.secret, means.truth,
                                                           case.settings.fresh_keys)
        self.keys: Keys = {purpose: derive_keys(self.secret, case.task.id, case.size, n, purpose)
                           for purpose, n in (("trial", case.trials), (Stage.RECHECK, 1),
                                              ("probe", 1), ("untrusted", case.trials))}
        self.walk = Walk(source, filename, nonce, time.time())
        self.started = 0.0  # when run() began (monotonic)

    # -- the walk -------------------------------------------------------------------------------
    def run(self) -> EvaluationResult:
        self.started = time.monotonic()
        steps: dict[str, Callable[[], Report]] = {
            "policy": self.phase_policy, "untrusted": self.phase_untrusted,
            "debug": self.phase_debug, "judge": self.phase_judge, "chip": self.phase_chip,
            "vouch": self.phase_vouch, "compare": self.phase_compare,
            "figures": self.phase_figures}
        for phase in (*PHASES[:2], "debug") if self.case.debug else PHASES:
            self._step(phase, steps[phase])
            if phase in self.walk.failures or (phase == "judge" and self.walk.budget is not None):
                break
        wall_s = round(time.monotonic() - self.started, 3)
        spans = Spans(wall_s, spans_of(self.walk.seconds, self.walk.parts, wall_s))
        return assemble(self.case, self.walk, decide(self._reports()), spans)

    def _step(self, phase: str, step: Callable[[], Report]) -> None:
        """One phase: its report kept, or its failure; anything else it raises is a crash,
        blamed on the stage after the last one the walk passed."""
        begun = time.monotonic()
        try:
            self.walk.keep(phase, step())
        except (KeyboardInterrupt, SystemExit):
            raise
        except StageFailure as failure:
            self.walk.failures[phase] = failure.failure
        except BaseException as exc:  # noqa: BLE001 - the run goes on: a verdict, not a bug
            done = self.walk.stages.last()
            self.walk.failures[phase] = Failure(
                Status.CRASHED, Stage(next_stage(done)) if done else Stage.STATIC,
                Rule.HARNESS, f"the evaluator failed on this kernel: {type(exc).__name__}: "
                              f"{str(exc)[:300]}")
        finally:
            self.walk.seconds[phase] = time.monotonic() - begun

    def _reports(self) -> Reports:
        """What :func:`decide` reads: the failures, the budget, the last stage passed, and the
        kernel's imports against its target where it failed to compile or was unverified."""
        walk, budget = self.walk, self.walk.budget
        hint = wrong_target_hint(self.source, self.case.target) if any(
            f.status in (Status.COMPILE_ERROR, Status.UNVERIFIED)
            for f in [*walk.failures.values(), *([budget] if budget else [])]) else ""
        last = Stage.CORRECT if self.case.debug else (walk.stages.last() or Stage.CORRECT)
        frames = walk.traced.frames if walk.traced else ()
        return Reports(failures=dict(walk.failures), budget=budget,
                       last_stage=Stage(last) if last in STAGES else Stage.CORRECT,
                       target_hint=hint, other_platform=hint.startswith(MISMATCH_HINT),
                       frame=frames[-1] if frames else "")

    def _response(self) -> JudgeResponse:
        response = self.walk.response
        assert response is not None, "a phase after the judge's ran without its response"
        return response

    # -- the phases -----------------------------------------------------------------------------
    def phase_policy(self) -> Checked:
        check_source(self.source, self.filename, debug=self.case.debug)
        self.walk.stages.note(Stage.STATIC, {"seconds": round(time.monotonic() - self.started, 4)})
        return Checked()

    def phase_untrusted(self) -> Traced:
        case, means, walk = self.case, self.means, self.walk
        if case.mode == "interpret":  # the truth is computed here while the others work
            if not case.debug:  # and the trusted runner warms up (on a device the chip's
                means.prestart()  # owner is started once and kept warm)
            means.prefetch(case.task, case.size, [] if walk.nonce else  # see evaluation_inputs
                           self.keys["trial"] + self.keys["probe"])
        job = tracer_job(case, self.source, self.filename, self.keys)
        outcome = means.tracers(case.debug).run(job.to_dict(), case.timeout_s, case.memory_bytes)
        found = traced(outcome, case, walk.stages)
        walk.parts["untrusted"] = {k: walk.stages.of(k)["seconds"]
                                   for k in (Stage.TRACE, HANDOVER_STEP) if walk.stages.of(k)}
        return found

    def phase_debug(self) -> Debugged:
        """A debug run's outputs (untrusted, like everything else from there) against the truth:
        shown to help, marked, never a verdict that counts."""
        probe = self.walk.traced.probe if self.walk.traced else {}
        judged = [(f"untrusted{i}", k) for i, k in enumerate(self.keys["untrusted"][:1])]
        missing = [label for label, _ in judged if label not in probe]
        if missing:
            return Debugged(failure=StageFailure(
                Status.CRASHED, Stage.CORRECT, f"the debug run returned no outputs for {missing}",
                rule=Rule.HARNESS).failure)
        found = self.compare(probe, judged, False, {})
        return Debugged(compared=found, failure=found.failure,
                        trials=None if found.failure else len(judged))

    def phase_judge(self) -> Judged:
        handover = self.walk.traced.handover if self.walk.traced else None
        assert handover is not None
        return judged(self.case, self.means.judge, handover, self.walk,
                      lambda directory: judge_request(self.case, self.source, self.filename,
                                                      self.keys, self.secret, directory))

    def phase_chip(self) -> ChipChecked:
        return chip_checked(self._response(), self.case, self.walk.stages)

    def phase_vouch(self) -> Vouched:
        judge = self.walk.judged
        return vouched(self.case, self.keys, self._response(), judge.outputs if judge else {},
                       self.compare)

    def compare(self, outputs: Outputs, judged: list[tuple[str, list[int]]], raced: bool,
                truths: Mapping[str, list[object]]) -> Compared:
        truth = TimedTruth(self.truth, self.walk.parts.setdefault("compare", {}))
        return compared(self.case, truth, outputs, judged, raced, truths)

    def phase_compare(self) -> Compared:
        vouch, judge = self.walk.vouched, self.walk.judged
        return self.compare(vouch.outputs if vouch else {}, list(vouch.judged) if vouch else [],
                            self._response().tpu_interpreter_race,
                            judge.truths if judge else {})

    def phase_figures(self) -> Timed:
        return timed(self._response(), self.case, self.walk)


def judged(case: Case, judge: Callable[[dict[str, object], Case], RunnerOutcome],
           handover: bytes, walk: Walk, request_for: Callable[[Path], JudgeRequest]) -> Judged:
    """The judge phase: the hand-over to a trusted runner in a directory of its own, its
    response read, the first budget problem it found, the outputs it streamed back."""
    directory = Path(tempfile.mkdtemp(prefix="jaxbench-judge-"))
    try:
        (directory / HANDOVER).write_bytes(handover)
        request = request_for(directory)
        outcome = judge(request.to_dict(), case)
        walk.parts["judge"] = judge_parts(outcome, case.mode)
        # The budgets: the judge's estimate from the jaxpr (it names the kernel's line) or
        # its count on the lowered modules, whichever found a problem first.
        said = read_response(outcome, case, walk.stages.as_dict())
        budget = None
        if said.budget_problem:
            rule = Rule(said.budget_rule) if said.budget_rule in RULES else Rule.VMEM_BUDGET
            # a budget the judge could not compute: it cannot know, so `unverified`
            budget = Failure(Status.UNVERIFIED if rule == Rule.TOOL_FAULT
                             else Status.COMPILE_ERROR, Stage.LOWER, rule,
                             said.budget_problem[:2000])
        try:
            response = ran(said)
        except StageFailure as failure:  # the judge ran it and found it wrong: it says so
            wrong = failure.status == Status.INCORRECT and failure.stage == Stage.CORRECT
            return Judged(budget=budget, judged_on=TRUSTED_EXPORT if wrong else None,
                          failure=failure.failure)
        if budget is not None:
            return Judged(response=response, budget=budget)
        try:
            outputs, truths = read_outputs(directory, request, response, case)
        except StageFailure as failure:
            return Judged(response=response, failure=failure.failure)
        return Judged(response=response, outputs=outputs, truths=truths)
    finally:
        remove_tree(directory)


def vouched(case: Case, keys: Keys, response: JudgeResponse, outputs: Outputs,
            compare: Callable[[Outputs, list[tuple[str, list[int]]], bool,
                               Mapping[str, list[object]]], Compared]) -> Vouched:
    """The vouch phase: the judge's run of the exported module vouches for the outputs (the
    trials, the rechecks the chip's owner ran, the TPU interpreter's run); where none could
    run here (no interpret-mode export), nothing does: `unverified`, after the Mosaic GPU
    interpreter's outputs, where it ran, could still find the kernel wrong."""
    error = response.stages.get(Stage.LOWER, {}).get("interpret_export_error")
    if case.mode == "device" or not error:
        judged = [(label, key) for label, key in zip(
            [f"trial{i}" for i in range(case.trials)], keys["trial"], strict=True)]
        try:
            outputs = {**outputs, **chip_decided(response, case)}
        except StageFailure as failure:
            return Vouched(judged_on=TRUSTED_EXPORT, failure=failure.failure)
        judged += [(f"recheck{i}", k) for i, k in enumerate(keys[Stage.RECHECK])
                   if case.mode == "device" and f"recheck{i}" in outputs]
        missing = [label for label, _ in judged if label not in outputs]
        if missing:
            return Vouched(judged_on=TRUSTED_EXPORT, failure=StageFailure(
                Status.CRASHED, Stage.CORRECT, f"the judge returned no outputs for {missing}",
                rule=Rule.HARNESS).failure)
        if "tpu_interpreter" in outputs:
            judged.append(("tpu_interpreter", keys["probe"][0]))
        return Vouched(judged_on=TRUSTED_EXPORT, judged=tuple(judged), outputs=outputs)
    # nothing the judge could run vouches for the outputs: never `correct`
    said = response.gpu_interpreter
    seen, found = "", None
    if "gpu_interpreter" in outputs:  # it can find the kernel wrong, no more
        found = compare({"gpu_interpreter": outputs["gpu_interpreter"]},
                        [("gpu_interpreter", keys["probe"][0])],
                        response.gpu_interpreter_race, {})
        if found.failure is not None:
            return Vouched(compared=found, failure=found.failure)
        seen = ("; JAX's Mosaic GPU interpreter ran it and its outputs matched the "
                "truth, which cannot make it `correct`")
    elif isinstance(said, str):
        seen = f"; JAX's Mosaic GPU interpreter: {said}"
    return Vouched(compared=found, failure=StageFailure(Status.UNVERIFIED, Stage.CORRECT, (
        "the kernel has no exportable interpret-mode lowering, so the judge cannot run "
        "it on this CPU and nothing vouches for its outputs (it passed every check up "
        "to lowering; evaluate it on the chip with --mode device): "
        f"{error}{seen}")[:2000], rule=Rule.NO_INTERPRET_EXPORT).failure)


def compared(case: Case, truth: Truth, outputs: Outputs, judged: list[tuple[str, list[int]]],
             raced: bool, truths: Mapping[str, list[object]]) -> Compared:
    """Each judged output against the float32 truth: the runner's on a device (computed there
    at full float32 precision), else ``truth(task, size, key)``, this process's on the CPU;
    the first that fails is the report's failure. The errors are the worst of those compared
    (None after one that was not finite)."""
    task, size = case.task, case.size
    expected = task.output_shapes(size)
    worst_abs, worst_rel, worst_fraction = 0.0, 0.0, 0.0
    errors: tuple[float | None, float | None, float | None] = (None, None, None)
    warnings: list[str] = []
    failure = None
    for label, key in judged:
        if isinstance(outputs[label], Verdict):  # compared on the chip (judge/chip_verdict.py)
            verdict = outputs[label]
        else:
            expected_truth = truths[label] if label in truths else truth(task, size, key)
            verdict = check_outputs(outputs[label], expected, expected_truth, task.atol,
                                    task.rtol)
        if verdict.nonfinite:  # no error figure describes a NaN: none is reported
            errors = (None, None, None)
        elif verdict.max_abs_err is not None:
            worst_abs = max(worst_abs, verdict.max_abs_err)
            worst_rel = max(worst_rel, verdict.rel_err or 0.0)
            worst_fraction = max(worst_fraction, verdict.tol_fraction or 0.0)
            errors = (worst_abs, worst_rel, round(worst_fraction, 4))
        probe_run = label in RACE_CHECKS
        if not verdict.ok:
            stage = Stage.RECHECK if label.startswith(Stage.RECHECK) else Stage.CORRECT
            where = "" if label.startswith(("trial", Stage.RECHECK)) else f" ({label})"
            rule = getattr(verdict, "rule", None) or Rule.MISMATCH
            if probe_run and raced:
                where += (f"; {RACE_CHECKS[label]} detected a data race: the result "
                          "depends on execution order")
                rule = Rule.INTERPRETER_RACE
            failure = StageFailure(Status.INCORRECT, stage, f"{verdict.message}{where}",
                                   rule=rule).failure
            break
        if probe_run and raced:
            warnings.append(f"{RACE_CHECKS[label]} detected a data race, but the outputs are "
                            "correct (e.g. outputs used as scratch and discarded)")
    return Compared(tolerance={"atol": task.atol, "rtol": task.rtol}, max_abs_err=errors[0],
                    rel_err=errors[1], tol_fraction=errors[2], warnings=tuple(warnings),
                    failure=failure)


def timed(response: JudgeResponse, case: Case, walk: Walk) -> Timed:
    """The figures phase: the figures from the judge's timing samples (device mode), computed
    here (noted in the ``time`` stage), with the roofline fraction and the chip's peaks."""
    task, size = case.task, case.size
    if not response.timing:
        return Timed(trials=case.trials)
    try:
        figures = summarize(response.timing)
    except ValueError as exc:
        raise StageFailure(Status.CRASHED, Stage.TIME, str(exc), rule=Rule.HARNESS) from None
    walk.stages.note(Stage.TIME, figures)
    chip = walk.chip
    kind = (response.device_kind if chip and chip.responded else None) or ""
    peaks = peak_for(kind) or (None, None)
    return Timed(figures=figures, roofline_fraction=roofline_fraction(
        task.flops(size), task.bytes(size), figures["t_kernel_ms"] / 1e3, kind),
        peak_flops=peaks[0], peak_bytes_per_s=peaks[1], trials=case.trials)
