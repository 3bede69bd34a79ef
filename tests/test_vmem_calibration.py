"""The TPU VMEM rule against real-chip outcomes (docs/vmem-calibration.md): each row of that
table is a case here, rebuilt as the kernel that ran (same blocks, grid, dtype and compiler
params) and judged for the chip it ran on, by the trusted budget on the exported module and by
the sandbox's early rule on the trace; both must give the chip's answer and the same count."""

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from jaxbench.evaluator.judge import budgets, exporting, memory_rules
from jaxbench.evaluator.sandbox.chip import as_chip

MiB = 1 << 20
DOC = Path(__file__).parents[1] / "docs" / "vmem-calibration.md"


def gated_mlp(block_t, block_h, limit=None):
    """A GeGLU feed-forward block, hidden axis innermost (x and the output revisited along it)."""
    def body(x, wg, wu, wd, o):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o[...] = jnp.zeros_like(o)
        o[...] += jnp.dot(jnp.dot(x[...], wg[...]) * jnp.dot(x[...], wu[...]), wd[...])

    def fn(x, wg, wu, wd):
        t, e = x.shape
        h = wg.shape[1]
        return pl.pallas_call(
            body, grid=(t // block_t, h // block_h),
            in_specs=[pl.BlockSpec((block_t, e), lambda i, j: (i, 0)),
                      pl.BlockSpec((e, block_h), lambda i, j: (0, j)),
                      pl.BlockSpec((e, block_h), lambda i, j: (0, j)),
                      pl.BlockSpec((block_h, e), lambda i, j: (j, 0))],
            out_specs=pl.BlockSpec((block_t, e), lambda i, j: (i, 0)),
            out_shape=jax.ShapeDtypeStruct((t, e), jnp.float32),
            compiler_params=pltpu.CompilerParams(vmem_limit_bytes=limit))(x, wg, wu, wd)
    return fn


GEMMA_MLP = [(256, 1152), (1152, 6912), (1152, 6912), (6912, 1152)]  # Gemma 3 1B, float32


def panel_gemm(bm, bn):
    """Row panel times column panel, K whole: (bm, K) and (K, bn) blocks, no accumulator."""
    def body(a, b, o):
        o[...] = jnp.dot(a[...], b[...], preferred_element_type=jnp.float32)

    def fn(a, b):
        (m, k), n = a.shape, b.shape[1]
        return pl.pallas_call(
            body, grid=(m // bm, n // bn),
            in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                      pl.BlockSpec((k, bn), lambda i, j: (0, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
            out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32))(a, b)
    return fn


def copy_rows(rows, limit=None):
    """A row-block copy: 2 x 2 buffers of (rows, 2048) float32."""
    def body(x, o):
        o[...] = x[...]

    def fn(x):
        return pl.pallas_call(
            body, grid=(x.shape[0] // rows,),
            in_specs=[pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0)),
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            compiler_params=pltpu.CompilerParams(vmem_limit_bytes=limit))(x)
    return fn


# id, chip, kernel, input shapes (float32), counted MiB, verdict (fits / uncertain / over)
CASES = [
    ("v5e-mlp-h384", "TPU v5 lite", gated_mlp(128, 384), GEMMA_MLP, 12.375, "fits"),
    ("v5e-mlp-h768", "TPU v5 lite", gated_mlp(128, 768), GEMMA_MLP, 22.5, "over"),
    ("v5e-mlp-h768-32mib", "TPU v5 lite", gated_mlp(128, 768, 32 * MiB), GEMMA_MLP, 22.5,
     "fits"),
    ("v5e-mlp-h6912-64mib", "TPU v5 lite", gated_mlp(128, 6912, 64 * MiB), GEMMA_MLP, 93.375,
     "over"),
    ("v5e-mlp-h6912-100mib", "TPU v5 lite", gated_mlp(128, 6912, 100 * MiB), GEMMA_MLP, 93.375,
     "fits"),
    ("v6e-gemm-f32-32.5mib", "TPU v6 lite", panel_gemm(256, 256), [(4096, 8192), (8192, 8192)],
     32.5, "uncertain"),
    ("v6e-over-by-1.5mib", "TPU v6 lite", copy_rows(1072), [(4288, 2048)], 33.5, "over"),
    ("v6e-whole-weight-block", "TPU v6 lite", panel_gemm(256, 28672),
     [(8192, 8192), (8192, 28672)], 968.0, "over"),
]


def _judge(kind, fn, shapes):
    specs = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    with as_chip("tpu", kind):
        closed = jax.make_jaxpr(fn)(*specs)
    exported = exporting.export(closed, specs, "tpu")
    trusted = budgets.check({"full": exported}, "tpu", kind)
    early = memory_rules.check(closed, "tpu", "full", kind)
    return trusted, early


@pytest.mark.parametrize("case,kind,fn,shapes,mib,verdict", CASES, ids=[c[0] for c in CASES])
def test_the_rule_gives_the_chips_answer(case, kind, fn, shapes, mib, verdict):
    (problem, figures), (early_problem, early_figures) = _judge(kind, fn, shapes)
    assert figures[0]["vmem_bytes"] == early_figures[0]["vmem_bytes"] == int(mib * MiB)
    if verdict == "over":
        assert "memory budget at size 'full'" in problem and f"needs {mib:.1f} MiB" in problem
        assert early_problem
    else:
        assert problem == early_problem == ""
        uncertain = verdict == "uncertain"
        assert bool(figures[0].get("vmem_uncertain")) is uncertain
        assert bool(early_figures[0].get("vmem_uncertain")) is uncertain


def test_the_documented_table_is_the_tested_table():
    """Every row of docs/vmem-calibration.md's table is a case here, with the same count and
    verdict, and every case is a row."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"^\| `([^`]+)` \|.*\| ([\d.]+) MiB \| (fits|uncertain|over) \|", line)
        if m:
            rows[m.group(1)] = (float(m.group(2)), m.group(3))
    assert rows == {c[0]: (c[4], c[5]) for c in CASES}


def test_a_kernel_in_the_margin_is_correct_with_a_warning(evaluator):
    """The v6e float32 GEMM as a candidate for 8p_gemm: correct at the small size, counted at
    32.5 MiB at full size (the TPU v6e it ran on accepted it), so a warning, not a refusal."""
    kernel = Path(__file__).parent / "calibration" / "v6e_f32_panel_gemm.py"
    result = evaluator.evaluate(kernel, "8p_gemm", trials=1, tpu_interpret=False)
    assert result.status == "correct", f"{result.stage}: {result.message}"
    full = [f for f in result.stages["lower"]["memory"] if f["size"] == "full"]
    assert full and full[0]["vmem_bytes"] == 32.5 * MiB and full[0]["vmem_uncertain"]
    assert any(w.startswith("VMEM: pallas_call #0 at size 'full' needs 32.50 MiB")
               for w in result.warnings), result.warnings
