"""The judge's outside-work budget (``judge/rules.check_target``) at its edge, on module reports
built by hand: at most ``max_fraction`` of the task's FLOPs, and of the module's own total (the
kernels' work beside XLA's), may run outside kernel calls; a data-movement task counts bytes;
every output must come out of a kernel. Each refusal carries its rule code."""

from types import SimpleNamespace

import pytest

from jaxbench.contract import Rule, StageFailure
from jaxbench.evaluator.judge import rules

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

TASK_FLOPS = 1_000_000.0


def _report(outside_flops, kernel_calls=1, outside_bytes=0.0):
    return SimpleNamespace(kernel_calls=kernel_calls, kernel_regions=[], heavy={},
                           outside_flops=outside_flops, outside_bytes=outside_bytes,
                           outside_ops={"dot_general": outside_flops},
                           custom_call_targets={"tpu_custom_call": kernel_calls})


def _kernels(flops=0.0, moved=0.0, unreached=()):
    return SimpleNamespace(flops=flops, bytes=moved, unreached=list(unreached),
                           outside_eqns=[(5.0, "dot_general", ("/x/k.py", 12))])


def test_outside_work_at_the_budget_passes_with_its_figures():
    figures = rules.check_target(_report(0.1 * TASK_FLOPS), TASK_FLOPS, 0.1)
    assert figures == {"kernel_calls": 1, "outside_flops": 0.1 * TASK_FLOPS,
                       "task_flops": TASK_FLOPS, "outside_ops": {"dot_general": 0.1 * TASK_FLOPS},
                       "custom_calls": {"tpu_custom_call": 1}, "work": "flops",
                       "kernel_flops": 0.0, "outside_bytes": 0.0, "kernel_bytes": 0.0}


@pytest.mark.parametrize("fraction,limit", [(0.11, 0.1), (0.3, 0.25), (0.02, 0.01)])
def test_outside_work_over_the_budget_is_no_pallas_with_its_code(fraction, limit):
    with pytest.raises(StageFailure) as failure:
        rules.check_target(_report(fraction * TASK_FLOPS), TASK_FLOPS, limit)
    assert (failure.value.status, failure.value.stage) == ("no_pallas", "lower")
    assert failure.value.rule == Rule.OUTSIDE_FLOPS
    assert failure.value.message.startswith(
        f"work outside pallas_call: {fraction:.0%} of the task's FLOPs run in XLA "
        f"(dot_general {fraction * TASK_FLOPS:.3g} FLOPs); at most {limit:.0%} may")


def test_no_kernel_call_is_no_pallas():
    with pytest.raises(StageFailure) as failure:
        rules.check_target(_report(0.0, kernel_calls=0), TASK_FLOPS, 0.1)
    assert (failure.value.status, failure.value.stage) == ("no_pallas", "lower")
    assert failure.value.rule == Rule.NO_KERNEL
    assert "no Pallas kernel custom call" in failure.value.message


ELEMENTS = 1000  # the task's input and output elements: glue floor 125 FLOPs


def test_share_of_the_module_at_the_budget_passes():
    # 1% of the nominal FLOPs, but judged against the kernels' 9x as much: 10% exactly
    figures = rules.check_target(_report(10_000.0), TASK_FLOPS, 0.1, _kernels(90_000.0),
                                 elements=ELEMENTS)
    assert figures["outside_share"] == pytest.approx(0.1)


def test_share_of_the_module_over_the_budget_names_the_line():
    # the algebraic shortcut: 1% of the nominal count, all of the module's work
    with pytest.raises(StageFailure) as failure:
        rules.check_target(_report(10_000.0), TASK_FLOPS, 0.1, _kernels(80_000.0),
                           elements=ELEMENTS)
    assert failure.value.rule == Rule.OUTSIDE_FLOPS
    assert "11% of the module's FLOPs run in XLA" in failure.value.message
    assert "dot_general at k.py:12" in failure.value.message
    assert "not a cheat" in failure.value.message


def test_glue_under_the_floor_is_never_refused_by_the_share():
    # a copy kernel (0 FLOPs) with an index clamp of 125 FLOPs: 100% of the module, but glue
    rules.check_target(_report(125.0), TASK_FLOPS, 0.1, _kernels(0.0), elements=ELEMENTS)
    with pytest.raises(StageFailure):
        rules.check_target(_report(126.0), TASK_FLOPS, 0.1, _kernels(0.0), elements=ELEMENTS)


def test_data_movement_counts_bytes_not_flops():
    # no FLOPs anywhere: the FLOPs share cannot see it; the bytes can
    report = _report(0.0, outside_bytes=1_000.0)
    rules.check_target(report, 0.0, 0.1, _kernels(0.0, moved=9_000.0), "bytes", ELEMENTS)
    with pytest.raises(StageFailure) as failure:
        rules.check_target(report, 0.0, 0.1, _kernels(0.0, moved=8_000.0), "bytes", ELEMENTS)
    assert failure.value.rule == Rule.OUTSIDE_BYTES
    assert "11% of the bytes" in failure.value.message
    # and a FLOPs task's layout glue is not counted in bytes
    rules.check_target(report, 0.0, 0.1, _kernels(0.0, moved=8_000.0), "flops", ELEMENTS)


def test_an_output_no_kernel_reaches_is_refused_with_its_line():
    kernels = _kernels(1e9, unreached=[(1, "dot_general", ("/x/k.py", 7))])
    with pytest.raises(StageFailure) as failure:
        rules.check_target(_report(0.0), TASK_FLOPS, 0.1, kernels, elements=ELEMENTS)
    assert failure.value.rule == Rule.OUTPUT_WITHOUT_KERNEL
    assert "output 1 is not written by any kernel" in failure.value.message
    assert "dot_general at k.py:7" in failure.value.message
