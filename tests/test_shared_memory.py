"""Shared memory on GPU targets is Triton's to decide (evaluator/judge/gpu/triton_rules.py and
triton_compile.py): where Triton's compiler runs (the `triton` extra), its compile for the chip's
sm_XX decides; without it, the judge refuses only what is over the chip's limit whatever layout
Triton chooses (a lower bound), and accepts what lies between that bound and its estimate with
an `smem_uncertain` warning."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

ROOT = Path(__file__).parent
ATTENTION = ROOT / "legit" / "kernels" / "gpu_mha_default_blocks.py"
OVER = ROOT / "triton_rules" / "shared_memory_attention.py"
MATMUL = ROOT.parent / "src/jaxbench/tasks/pallasbench/l1_matmul/seed_gpu.py"

# What Triton 3.8 itself allocates (bytes of shared memory, `compiled.metadata.shared`) for the
# small size, measured with triton_compile.compile_all on this host: the lower bound must never
# exceed it, for either capability.
MEASURED = [
    # kernel, task, stages patch, {capability: bytes}
    (ATTENTION, "l3_multi_head_attention", None, {80: 98_304, 90: 163_840}),
    (OVER, "l3_multi_head_attention", None, {80: 491_520, 90: 557_056}),
    (MATMUL, "l1_matmul", ("num_stages=3", "num_stages=7"), {80: 196_608, 90: 229_376}),
    (ROOT / "calibration" / "gpu_whole_row_tensor.py", "8p_gemm", None,
     {80: 262_144, 90: 589_824}),
    (ROOT / "triton_rules" / "shared_memory.py", "8p_gemm", None, {80: 524_288, 90: 524_288}),
]


def _figures(path: Path, task_id: str, patch, tmp_path, chip="NVIDIA A100"):
    from jaxbench.evaluator.judge import memory_rules
    from jaxbench.tasks import get_task

    text = path.read_text()
    if patch:
        text = text.replace(*patch)
    namespace: dict = {}
    exec(compile(text, str(path), "exec"), namespace)  # noqa: S102 - the repository's kernels
    task = get_task(task_id)
    closed = jax.make_jaxpr(namespace["kernel"])(*[
        jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in task.input_specs("small")])
    return memory_rules.check(closed, "gpu", "small", "TPU v6 lite", chip)[1][0]


@pytest.mark.parametrize("path,task,patch,measured", MEASURED, ids=[m[0].name for m in MEASURED])
def test_the_lower_bound_is_never_above_what_triton_allocates(path, task, patch, measured,
                                                              tmp_path):
    figures = _figures(path, task, patch, tmp_path)
    assert 0 < figures["dot_shared_bytes_lower_bound"] <= min(measured.values())
    assert figures["dot_shared_bytes_estimate"] >= figures["dot_shared_bytes_lower_bound"]


def test_jax_gpu_attention_with_its_default_blocks_is_correct_on_the_a100(evaluator):
    """JAX's own attention, float32, default blocks: the estimate (192 KiB) is over the A100's
    163 KiB, Triton for sm_80 needs 96 KiB, the lower bound is 32 KiB. Without Triton's compiler
    (the suite runs with JAXBENCH_TRITON_COMPILE=0): `correct`, with the warning."""
    result = evaluator.evaluate(ATTENTION, "l3_multi_head_attention", trials=1)
    assert result.chip == "NVIDIA A100"
    assert result.status == "correct", f"{result.stage}: {result.message}"
    warnings = [w for w in result.warnings if w.startswith("smem_uncertain")]
    assert warnings and "192 KiB" in warnings[0] and "163 KiB" in warnings[0], warnings
    assert {f["size"] for f in result.smem_uncertain} == {"small", "full"}


def test_shared_memory_surely_over_the_limit_is_still_refused(evaluator):
    result = evaluator.evaluate(OVER, "l3_multi_head_attention", trials=1)
    assert (result.status, result.stage) == ("compile_error", "lower"), result.message
    assert "Triton rule shared_memory" in result.message
    assert "at least 224 KiB whatever layout Triton chooses" in result.message
    assert "NVIDIA A100's 163 KiB" in result.message


@pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                    reason="the optional `triton` extra is not installed")
def test_where_triton_compiles_it_decides(evaluator, monkeypatch):
    monkeypatch.setenv("JAXBENCH_TRITON_COMPILE", "1")
    result = evaluator.evaluate(ATTENTION, "l3_multi_head_attention", trials=1)
    assert result.status == "correct", f"{result.stage}: {result.message}"
    assert not [w for w in result.warnings if w.startswith("smem_uncertain")]
    compiled = result.triton_compile
    assert compiled["capability"] == 80
    assert all(k["ok"] and k["shared_bytes"] <= 163 * 1024 for k in compiled["kernels"])
    refused = evaluator.evaluate(OVER, "l3_multi_head_attention", trials=1)
    assert (refused.status, refused.stage) == ("compile_error", "lower")


def test_the_warning_is_dropped_only_where_triton_checked_every_kernel():
    from jaxbench.evaluator.parent.chip_checks import uncertain_smem

    figure = {"kernel": 0, "size": "small", "smem_uncertain": True,
              "dot_shared_bytes_estimate": 192 * 1024, "dot_shared_bytes_lower_bound": 32 * 1024,
              "shared_limit_bytes": 163 * 1024, "smem_where": "attention.py:166"}
    _, (warning,) = uncertain_smem([figure, {"kernel": 1}, "junk"])
    assert warning.startswith("smem_uncertain: pallas_call #0 at size 'small'")
    assert "32 KiB (attention.py:166)" in warning
