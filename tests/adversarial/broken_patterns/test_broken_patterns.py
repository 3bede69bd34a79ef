"""Broken variants of the public-pattern kernels of tests/legit (issue 48.4): with atomics,
`pl.multiple_of`, TensorCore meshes and PRNG-drawn weights now read and judged, each variant
that computes something else is still not `correct`, and says why."""

from pathlib import Path

import pytest

KERNELS = Path(__file__).parent

CASES = [
    # file, task, status, stage, rule
    ("gpu_atomic_row_sum_double_count.py", "l1_reduce_sum", "incorrect", "correct", "mismatch"),
    # the sums start from the judge's random fill: off the truth (or NaN/Inf, or two fills differ)
    ("gpu_atomic_row_sum_unzeroed.py", "l1_reduce_sum", "incorrect", "correct", None),
    ("gpu_split_k_wrong_split.py", "8p_gemm", "incorrect", "correct", "mismatch"),
    ("gpu_split_k_plain_store.py", "8p_gemm", "incorrect", "lower", "gpu_race"),
    ("tpu_core_map_half_grid.py", "l1_add", "incorrect", "correct", "uninitialised"),
    # a race only the trials' group sizes show: decided on them, before the kernel runs
    ("gpu_grouped_rows_overlap.py", "11p_megablox_gmm", "incorrect", "lower", "gpu_race"),
    # the default weights' random draw stays in XLA: refused for its work outside the kernel
    # before the trials (whatever status that refusal carries, never `correct`)
    ("tpu_model_prng_default_weights.py", "41k_gemm_add_relu", None, "lower", "outside_flops"),
    ("gpu_model_prng_default_weights.py", "41k_gemm_add_relu", None, "lower", "outside_flops"),
    ("tpu_module_prng_own_weight.py", "21k_gemm_divide_sum_scaling", None, "lower",
     "outside_flops"),
]


@pytest.mark.parametrize("name,task,status,stage,rule", CASES, ids=[c[0] for c in CASES])
def test_broken_pattern_is_not_correct(evaluator, name, task, status, stage, rule):
    result = evaluator.evaluate(KERNELS / name, task, trials=2, timeout_s=300)
    assert result.status != "correct", name
    if status is not None:
        assert result.status == status, result.message
    assert result.stage == stage, result.message
    if rule is not None:
        assert result.rule == rule, result.message


def test_every_broken_pattern_is_covered_and_names_its_honest_kernel():
    legit = Path(__file__).parents[2] / "legit" / "kernels"
    assert {p.name for p in KERNELS.glob("*.py") if not p.name.startswith("test_")} \
        == {c[0] for c in CASES}
    for name, *_ in CASES:
        doc = (KERNELS / name).read_text().split('"""')[1]
        assert doc.startswith("Broken (tests/legit/kernels/"), name
        assert (legit / doc.split("kernels/")[1].split(")")[0]).exists(), name
