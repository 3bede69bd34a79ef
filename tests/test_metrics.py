"""The metric formulas of docs/design.md, each against values computed by hand."""

from __future__ import annotations

import math

import pytest

from jaxbench.contract import EvaluationResult
from jaxbench.report import metrics
from jaxbench.report.summary import compiled, correct_at_n

pytestmark = pytest.mark.quick  # the quick tier (`pytest -m quick`): the whole module

# Per task, samples in draw order: (correct, speedup).
SAMPLES = {
    "a": [(False, None), (True, 0.5), (True, 2.0)],  # beats XLA at the 3rd sample
    "b": [(True, 1.5)],                              # beats XLA at once
    "c": [(True, 0.8), (False, None)],               # correct, never faster
    "d": [(False, None), (False, 3.0)],              # an incorrect sample's speed never counts
}


def test_speedup():
    assert metrics.speedup(3.0, 1.5) == 2.0


def test_fast_p():
    best = {"a": (True, 2.0), "b": (True, 1.0), "c": (False, 5.0), "d": (True, None)}
    assert metrics.fast_p(best, 1.0) == 0.25   # only a: b is not > 1, c incorrect, d untimed
    assert metrics.fast_p(best, 0.0) == 0.5    # a and b
    assert metrics.fast_p({}, 1.0) == 0.0


def test_fast_p_at_n():
    assert metrics.fast_p_at_n(SAMPLES, 1.0, 1) == 0.25  # b
    assert metrics.fast_p_at_n(SAMPLES, 1.0, 3) == 0.5   # a, b
    assert metrics.fast_p_at_n(SAMPLES, 0.0, 1) == 0.5   # b, c
    assert metrics.fast_p_at_n(SAMPLES, 0.0, 2) == 0.75  # a, b, c
    assert metrics.fast_p_at_n(SAMPLES, 0.0, 144) == 0.75


def test_best_speedup():
    assert metrics.best_speedup(SAMPLES["a"]) == 2.0
    assert metrics.best_speedup(SAMPLES["d"]) is None


def test_geomean_speedup_floors_and_counts_failures_as_one():
    # best: a 2.0, b 1.5, c 0.8 -> floored 1, d none -> 1
    expected = math.exp((math.log(2.0) + math.log(1.5)) / 4)
    assert metrics.geomean_speedup(SAMPLES) == pytest.approx(expected)
    assert metrics.geomean_speedup({}) == 1.0


def test_geomean_speedup_unfloored_over_correct_tasks():
    expected = (2.0 * 1.5 * 0.8) ** (1 / 3)
    assert metrics.geomean_speedup_unfloored(SAMPLES) == pytest.approx(expected)
    assert metrics.geomean_speedup_unfloored({"d": SAMPLES["d"]}) is None


def test_rate():
    assert metrics.rate([True, False, True, True]) == 0.75
    assert metrics.rate([]) == 0.0


def test_correct_at_n():
    assert correct_at_n(SAMPLES, 1) == 0.5   # b, c
    assert correct_at_n(SAMPLES, 2) == 0.75  # a, b, c
    assert correct_at_n({}, 8) == 0.0


def test_compiled_means_past_lowering():
    def result(status: str, stage: str) -> EvaluationResult:
        return EvaluationResult(task="8p_gemm", target="tpu", mode="interpret", size="small",
                                status=status, stage=stage)

    assert compiled(result("correct", "correct"))
    assert compiled(result("incorrect", "correct"))
    assert compiled(result("runtime_error", "correct"))
    assert not compiled(result("compile_error", "lower"))
    assert not compiled(result("no_pallas", "trace"))
    assert not compiled(result("compile_error", "static"))


def test_pass_at_k_is_the_unbiased_estimator_by_hand():
    from jaxbench.report.metrics import pass_at_k

    # Best-of-N, 8 samples, 5 correct: the chance one drawn sample is correct is 5/8
    assert pass_at_k(8, 5, 1) == pytest.approx(0.625)
    # two drawn without replacement miss only if both come from the 3 wrong ones: 1 - 3/28
    assert pass_at_k(8, 5, 2) == pytest.approx(1 - 3 / 28)
    assert pass_at_k(8, 5, 4) == 1.0  # 4 draws cannot all be among 3 wrong ones
    assert pass_at_k(10, 1, 3) == pytest.approx(1 - (9 * 8 * 7) / (10 * 9 * 8))  # = 0.3
    assert pass_at_k(8, 0, 8) == 0.0 and pass_at_k(0, 0, 1) == 0.0
    assert pass_at_k(3, 1, 8) == 1.0  # k beyond n: whether any sample is good


def test_correct_and_fast_p_at_k_average_pass_at_k_over_tasks():
    from jaxbench.report.metrics import correct_at_k, fast_p_at_k

    samples = {"a": [(True, 0.5), (False, None), (True, 2.0), (False, None)],
               "b": [(False, None), (True, 1.5)]}
    assert correct_at_k(samples, 1) == pytest.approx((2 / 4 + 1 / 2) / 2)
    assert fast_p_at_k(samples, 1.0, 1) == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert fast_p_at_k(samples, 1.0, 2) == pytest.approx(((1 - 3 / 6) + 1.0) / 2)
    assert correct_at_k({}, 1) == 0.0 and fast_p_at_k({}, 1.0, 1) == 0.0
