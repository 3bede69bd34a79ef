"""One evaluation's result, assembled once from what its phases reported: :func:`assemble`,
the one place in the parent that names the fields of an
:class:`~jaxbench.contract.result.EvaluationResult` (docs/design.md, "The evaluation result");
and :func:`spans_of`, where its wall went."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jaxbench.backends.host import versions
from jaxbench.contract import Stage, Status, source_sha256
from jaxbench.contract.result import EvaluationResult
from jaxbench.evaluator.parent.case import Case
from jaxbench.evaluator.parent.chip_checks import lowering_fidelity
from jaxbench.evaluator.parent.reports import Compared, Spans, Walk
from jaxbench.evaluator.parent.static import parses
from jaxbench.evaluator.parent.untrusted import printable_result
from jaxbench.evaluator.parent.verdict import Verdict

SPEEDUP_REVIEW_THRESHOLD = 10.0
# Who vouches for the outputs (``judged_on``): the judge's run of the exported module, or a
# debug run on the untrusted side (which never counts).
TRUSTED_EXPORT = "trusted_export"
UNTRUSTED_DEBUG_RUN = "untrusted_debug_run"
DEBUG_WARNING = ("debug run: jax.debug.print was allowed and the kernel ran on the untrusted "
                 "side, without the trusted judge; this verdict does not count (rerun without "
                 "--debug)")


def assemble(case: Case, walk: Walk, verdict: Verdict, spans: Spans) -> EvaluationResult:
    """The result of ``case``: the ``verdict`` (:func:`~jaxbench.evaluator.parent.verdict.
    decide`), what ``walk``'s reports found, and ``spans``; every string in it made
    printable (text from the kernel can reach any of them)."""
    traced, chip, timed, response = walk.traced, walk.chip, walk.timed, walk.response
    compared = _compared(walk)
    taken = response if chip is not None and chip.responded else None
    figures: Mapping[str, Any] = (timed.figures if timed else None) or {}
    speedup = figures.get("speedup")
    fields: dict[str, Any] = dict(
        task=case.task.id, target=case.target, mode=case.mode, size=case.size,
        status=verdict.status, stage=verdict.stage, rule=verdict.rule,
        message=_message(verdict, walk),
        max_abs_err=compared.max_abs_err if compared else None,
        rel_err=compared.rel_err if compared else None,
        t_ref_ms=figures.get("t_ref_ms"), t_kernel_ms=figures.get("t_kernel_ms"),
        speedup=speedup, compile_s=taken.compile_s if taken else None,
        source_sha256=source_sha256(walk.source), stages=walk.stages.as_dict(),
        versions=versions(), started_at=walk.started_at, kernel_file=walk.filename,
        judged_on=_judged_on(walk),
        isolation=traced.isolation if traced else None,
        sealed=traced.sealed if traced else None,
        kernel_backend=chip.kernel_backend if chip else None,
        timing_method=figures.get("timing_method"),  # None where nothing was timed
        chip=case.chip,
        lowering_fidelity=(chip.lowering_fidelity if chip else None) or lowering_fidelity(
            case.target, case.mode, case.chip),
        timeout_s=case.timeout_s, trial_nonce=walk.nonce,
        device_kind=taken.device_kind if taken else None,
        backend=taken.backend if taken else None,
        structure=taken.structure if taken else None,
        tolerance=compared.tolerance if compared else None,
        tol_fraction=compared.tol_fraction if compared else None,
        roofline_fraction=timed.roofline_fraction if timed else None,
        peak_flops=timed.peak_flops if timed else None,
        peak_bytes_per_s=timed.peak_bytes_per_s if timed else None,
        trials=_trials(walk),
        fits=response.fits if response and isinstance(response.fits, dict) else None,
        wall_s=spans.wall_s, spans=dict(spans.spans), warnings=_warnings(case, walk),
        review=(f"speedup {speedup:.1f}x exceeds {SPEEDUP_REVIEW_THRESHOLD:g}x: check the "
                "kernel by hand") if verdict.status == Status.CORRECT
        and (speedup or 0) > SPEEDUP_REVIEW_THRESHOLD else None,
        tool_faults=chip.tool_faults if chip else (),
        smem_uncertain=chip.smem_uncertain if chip else (),
        triton_compile=chip.triton.triton_compile if chip and chip.triton else None,
        candidate_frames=traced.frames if traced else (),
        output=traced.output if traced else None,
        artifacts=chip.artifacts if chip else None, debug=bool(case.debug))
    return EvaluationResult(**printable_result(fields))


def _message(verdict: Verdict, walk: Walk) -> str:
    """The verdict's message; a `correct` kernel whose reference was not timed (device mode:
    it did not fit the chip) carries the reason instead."""
    fits = walk.response.fits if walk.response else None
    if isinstance(fits, dict) and fits.get("reason") and verdict.status == Status.CORRECT:
        return fits["reason"]
    return verdict.message


def _compared(walk: Walk) -> Compared | None:
    """The comparison with the truth that was made: a debug run's, the Mosaic GPU
    interpreter's where nothing else vouched, or the judged outputs'."""
    debugged, vouched = walk.debugged, walk.vouched
    return ((debugged.compared if debugged else None)
            or (vouched.compared if vouched else None) or walk.compared)


def _judged_on(walk: Walk) -> str | None:
    """What ran the outputs that were judged."""
    if walk.debugged is not None:
        return UNTRUSTED_DEBUG_RUN
    judged, vouched = walk.judged, walk.vouched
    return (vouched.judged_on if vouched else None) or (judged.judged_on if judged else None)


def _trials(walk: Walk) -> int | None:
    debugged, timed = walk.debugged, walk.timed
    if debugged is not None and debugged.trials is not None:
        return debugged.trials
    return timed.trials if timed else None


def _warnings(case: Case, walk: Walk) -> list[str]:
    """Every phase's warnings, in the order the phases found them."""
    found = []
    if case.assumed_target and parses(walk.source):
        found.append(f'the kernel declares no TARGET: evaluated for {case.target} '
                     f'(add TARGET = "tpu" or "gpu" to the file, or pass --target)')
    traced, debugged, chip, vouched = walk.traced, walk.debugged, walk.chip, walk.vouched
    found += traced.warnings if traced else ()
    if debugged is not None:
        found.append(DEBUG_WARNING)
        found += debugged.compared.warnings if debugged.compared else ()
    found += chip.warnings if chip else ()
    found += vouched.compared.warnings if vouched and vouched.compared else ()
    found += walk.compared.warnings if walk.compared else ()
    return found


# Each phase's unmeasured rest: what it is.
PHASE_REST = {"policy": Stage.STATIC, "untrusted": "tracer_io", "judge": "judge_io",
              "chip": "chip_checks", "vouch": "vouch", "compare": "compare",
              "figures": "figures", "debug": "debug_compare"}


def spans_of(phase_seconds: dict[str, float], parts: dict[str, dict[str, float]],
             wall_s: float) -> dict[str, float]:
    """Where an evaluation's wall went: each phase's measured parts (the tracer's trace and
    hand-over; the runner's or chip owner's own spans, the wait for it and its start; the
    float32 truth here), each phase's rest under its name (:data:`PHASE_REST`: process
    start-up and transfers for the tracer and the judge), and ``other``, the wall outside
    every phase. Seconds, rounded to milliseconds."""
    spans: dict[str, float] = {}
    for phase, seconds in phase_seconds.items():
        measured = {k: v for k, v in parts.get(phase, {}).items() if v > 0}
        for name, value in measured.items():
            spans[name] = spans.get(name, 0.0) + value
        rest = seconds - sum(measured.values())
        if rest > 0:
            name = PHASE_REST.get(phase, phase)
            spans[name] = spans.get(name, 0.0) + rest
    spans["other"] = max(0.0, wall_s - sum(phase_seconds.values()))
    return {k: round(v, 3) for k, v in spans.items()}
