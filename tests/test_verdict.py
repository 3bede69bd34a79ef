"""The verdict is a pure function of the phases' reports (jaxbench.evaluator.parent.verdict):
driven here exhaustively on fixtures, with no process, file or clock."""

from __future__ import annotations

import itertools

import pytest

from jaxbench.contract import Failure, Rule, Stage, Status
from jaxbench.evaluator.parent.verdict import PHASES, Reports, decide

pytestmark = pytest.mark.quick

# One failure each phase can report (its usual status, stage and code).
TYPICAL = {
    "policy": Failure(Status.REJECTED, Stage.STATIC, Rule.STATIC_POLICY, "policy"),
    "untrusted": Failure(Status.COMPILE_ERROR, Stage.TRACE, Rule.TRACE_ERROR, "untrusted"),
    "judge": Failure(Status.RUNTIME_ERROR, Stage.CORRECT, Rule.RUNTIME, "judge"),
    "chip": Failure(Status.COMPILE_ERROR, Stage.LOWER, Rule.CHIP_FEATURES, "chip"),
    "vouch": Failure(Status.UNVERIFIED, Stage.CORRECT, Rule.NO_INTERPRET_EXPORT, "vouch"),
    "compare": Failure(Status.INCORRECT, Stage.CORRECT, Rule.MISMATCH, "compare"),
    "figures": Failure(Status.CRASHED, Stage.TIME, Rule.HARNESS, "figures"),
}
JUDGE_AT_LOWER = Failure(Status.REJECTED, Stage.LOWER, Rule.OUTSIDE_FLOPS, "judge at lower")
BUDGET = Failure(Status.COMPILE_ERROR, Stage.LOWER, Rule.VMEM_BUDGET, "budget")


def expected_winner(failures: dict[str, Failure], budget: Failure | None) -> Failure | None:
    """The specification, written as one ordered list: the first present wins."""
    judge = failures.get("judge")
    order = [failures.get("policy"), failures.get("untrusted"),
             judge if judge is not None and judge.stage == Stage.LOWER else None,
             budget,
             judge if judge is not None and judge.stage != Stage.LOWER else None,
             failures.get("chip"), failures.get("vouch"), failures.get("compare"),
             failures.get("figures")]
    return next((f for f in order if f is not None), None)


def test_the_phases_are_the_evaluations_walk():
    assert PHASES == ("policy", "untrusted", "judge", "chip", "vouch", "compare", "figures")


@pytest.mark.parametrize("judge_at_lower", [False, True])
@pytest.mark.parametrize("with_budget", [False, True])
def test_every_combination_of_failures_is_decided_by_the_precedence(judge_at_lower, with_budget):
    budget = BUDGET if with_budget else None
    for n in range(len(PHASES) + 1):
        for phases in itertools.combinations(PHASES, n):
            failures = {p: TYPICAL[p] for p in phases}
            if judge_at_lower and "judge" in failures:
                failures["judge"] = JUDGE_AT_LOWER
            verdict = decide(Reports(failures=failures, budget=budget))
            winner = expected_winner(failures, budget)
            if winner is None:
                assert verdict.status is Status.CORRECT and verdict.message == "", phases
            else:
                assert (verdict.status, verdict.stage, verdict.rule, verdict.message) == (
                    winner.status, winner.stage, winner.rule, winner.message), phases


@pytest.mark.parametrize("stage", list(Stage))
def test_a_correct_evaluation_ends_at_the_last_stage_it_passed(stage):
    verdict = decide(Reports(last_stage=stage))
    assert (verdict.status, verdict.stage, verdict.rule) == (Status.CORRECT, stage, None)


HINT = "this looks like a GPU kernel (it imports jax.experimental.pallas.triton) but was lowered for tpu"


@pytest.mark.parametrize("status", list(Status)[1:])
@pytest.mark.parametrize("stage", list(Stage))
@pytest.mark.parametrize("other_platform", [False, True])
def test_the_target_hint_applies_to_compile_errors_at_trace_and_lower_only(status, stage,
                                                                           other_platform):
    failure = Failure(status, stage, Rule.LOWERING, "JAX said no")
    hint = HINT if other_platform else "the kernel passes interpret= itself"
    verdict = decide(Reports(failures={"judge": failure}, target_hint=hint,
                             other_platform=other_platform))
    if status is Status.COMPILE_ERROR and stage in (Stage.TRACE, Stage.LOWER):
        alone = other_platform and stage is Stage.LOWER
        assert verdict.message == (hint if alone else f"{hint}; JAX said no")
    else:
        assert verdict.message == "JAX said no"
    assert (verdict.status, verdict.stage, verdict.rule) == (status, stage, Rule.LOWERING)


def test_a_lowering_tool_crash_on_a_kernel_for_the_other_platform_is_its_compile_error():
    """A GPU kernel lowered for the TPU (no TARGET declared) can crash inside Mosaic's own
    lowering: the kernel was written for the other chip, so the chip surely refuses it."""
    crash = Failure(Status.UNVERIFIED, Stage.LOWER, Rule.TOOL_FAULT, "Mosaic crashed")
    verdict = decide(Reports(failures={"judge": crash}, target_hint=HINT, other_platform=True))
    assert (verdict.status, verdict.stage, verdict.rule, verdict.message) == (
        Status.COMPILE_ERROR, Stage.LOWER, Rule.WRONG_TARGET, HINT)
    # the same crash on a kernel for its own platform stays the tool's fault
    own = decide(Reports(failures={"judge": crash}, target_hint="", other_platform=False))
    assert (own.status, own.rule, own.message) == (Status.UNVERIFIED, Rule.TOOL_FAULT,
                                                   "Mosaic crashed")


@pytest.mark.parametrize("phase", PHASES)
def test_the_candidates_frame_is_named_after_any_failure(phase):
    verdict = decide(Reports(failures={phase: TYPICAL[phase]},
                             frame="k.py:12 in kernel: return jnp.dot(a, b)"))
    assert verdict.message == f"{TYPICAL[phase].message} (at k.py:12 in kernel)"


@pytest.mark.parametrize("installed", [True, False])
def test_a_triton_compiler_that_does_not_run_is_recorded_in_the_result(monkeypatch, installed):
    """JAXBENCH_TRITON_COMPILE=0 (or no `triton` package) takes a check that can refuse a GPU
    kernel away: the result says so, and why."""
    from jaxbench.evaluator.judge.gpu import triton_compile
    from jaxbench.evaluator.parent import chip_checks

    monkeypatch.setattr(triton_compile, "available", lambda: installed)
    monkeypatch.setenv("JAXBENCH_TRITON_COMPILE", "0")
    compiled = chip_checks.triton_compiled([{"name": "k", "ttir": "x"}], "A100")
    assert compiled.decided is False and compiled.failure is None
    reason = "turned off: JAXBENCH_TRITON_COMPILE=0" if installed else "no `triton` package"
    assert compiled.triton_compile == f"skipped: {reason}"
    assert reason in chip_checks.lowering_fidelity("gpu", "interpret", "A100", "triton")
