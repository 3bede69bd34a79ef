"""The judge's outside-work budget (``judge/rules.check_target``) at its edge, on module reports
built by hand: at most ``max_fraction`` of the task's FLOPs may run outside kernel calls."""

from types import SimpleNamespace

import pytest

from jaxbench.evaluator.judge import rules
from jaxbench.evaluator.result import StageFailure

TASK_FLOPS = 1_000_000.0


def _report(outside_flops, kernel_calls=1):
    return SimpleNamespace(kernel_calls=kernel_calls, kernel_regions=[], heavy={},
                           outside_flops=outside_flops,
                           outside_ops={"dot_general": outside_flops},
                           custom_call_targets={"tpu_custom_call": kernel_calls})


def test_outside_work_at_the_budget_passes_with_its_figures():
    figures = rules.check_target(_report(0.1 * TASK_FLOPS), TASK_FLOPS, 0.1)
    assert figures == {"kernel_calls": 1, "outside_flops": 0.1 * TASK_FLOPS,
                       "task_flops": TASK_FLOPS, "outside_ops": {"dot_general": 0.1 * TASK_FLOPS},
                       "custom_calls": {"tpu_custom_call": 1}}


@pytest.mark.parametrize("fraction,limit", [(0.11, 0.1), (0.3, 0.25), (0.02, 0.01)])
def test_outside_work_over_the_budget_is_rejected(fraction, limit):
    with pytest.raises(StageFailure) as failure:
        rules.check_target(_report(fraction * TASK_FLOPS), TASK_FLOPS, limit)
    assert (failure.value.status, failure.value.stage) == ("rejected", "lower")
    assert failure.value.message.startswith(
        f"work outside pallas_call: {fraction:.0%} of the task's FLOPs run in XLA "
        f"(dot_general {fraction * TASK_FLOPS:.3g} FLOPs); at most {limit:.0%} may")


def test_no_kernel_call_is_no_pallas():
    with pytest.raises(StageFailure) as failure:
        rules.check_target(_report(0.0, kernel_calls=0), TASK_FLOPS, 0.1)
    assert (failure.value.status, failure.value.stage) == ("no_pallas", "lower")
    assert "no Pallas kernel custom call" in failure.value.message
