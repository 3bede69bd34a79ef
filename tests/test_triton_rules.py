"""Triton's rules checked on a CPU (evaluator/judge/gpu/triton_rules.py): one kernel per rule,
judged through the real evaluator as `compile_error` at stage `lower`, naming the rule, the
tensor and the kernel file's line; the exported Triton IR verified by jaxlib's dialect; and
the honest counterparts stay correct."""

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

KERNELS = Path(__file__).parent / "triton_rules"


@pytest.mark.parametrize("name,task,words", [
    ("non_power_of_two.py", "l1_relu",
     ["Triton rule power_of_two", "float32[64,384]", "24,576 elements",
      "non_power_of_two.py:12: wide = jnp.concatenate"]),
    ("over_2_20.py", "l1_relu",
     ["Triton's rules at size 'full'", "Triton rule max_elements", "float32[1024,4096]",
      "over_2_20.py:13"]),
    ("unmasked_edge.py", "l1_relu",
     ["Triton rule edge_mask", "block (64, 256) does not divide its array (256, 384)",
      "without a mask", "unmasked_edge.py:14"]),
    ("shared_memory.py", "8p_gemm",
     ["Triton rule shared_memory", "1536 KiB", "3 pipeline stages", "shared_memory.py:17"]),
])
def test_each_triton_rule_is_a_compile_error_with_its_line(evaluator, name, task, words):
    result = evaluator.evaluate(KERNELS / name, task, trials=1)
    assert (result.status, result.stage) == ("compile_error", "lower"), result.message
    for w in words:
        assert w in result.message, result.message


def test_triton_ir_that_fails_verification_is_a_compile_error(evaluator):
    """jaxlib's own Triton dialect verifies the exported IR (no `triton` package needed)."""
    result = evaluator.evaluate(KERNELS / "invalid_ir.py", "l1_relu", trials=1)
    assert (result.status, result.stage) == ("compile_error", "lower"), result.message
    assert "Triton IR fails verification" in result.message
    assert "'scf.for' op failed to verify" in result.message


def test_masked_edge_blocks_are_correct(evaluator):
    result = evaluator.evaluate(KERNELS / "masked_edge.py", "l1_relu", trials=1)
    assert result.status == "correct", f"{result.stage}: {result.message}"


def _trace(fn, *shapes):
    from jaxbench import compat

    with compat.abstract_device("cuda", "NVIDIA H200"):
        return jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes])


def _copy(block, params):
    from jax.experimental import pallas as pl

    def body(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    def fn(x):
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(pl.cdiv(x.shape[0], block[0]),),
                              in_specs=[pl.BlockSpec(block, lambda i: (i, 0))],
                              out_specs=pl.BlockSpec(block, lambda i: (i, 0)),
                              compiler_params=params)(x)
    return fn


def _rows_of_32(body):
    """A Triton pallas_call of ``body`` over (32, 128) row blocks: ragged when the rows are
    not a multiple of 32."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    def fn(x):
        return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(pl.cdiv(x.shape[0], 32),),
                              in_specs=[pl.BlockSpec((32, 128), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((32, 128), lambda i: (i, 0)),
                              compiler_params=plgpu.CompilerParams(num_warps=4))(x)
    return fn


def test_rules_apply_to_triton_kernels_only_unless_asked():
    """A TPU-style kernel is not a Triton program (no finding), but the GPU-rule table checks
    it as if ported unchanged (every_kernel=True)."""
    from jax.experimental.pallas import tpu as pltpu
    from jax.experimental.pallas import triton as plgpu

    from jaxbench.evaluator.judge.gpu import triton_rules

    tpu_style = _trace(_copy((24, 128), pltpu.CompilerParams()), (96, 128))
    assert triton_rules.check_trace(tpu_style) == []
    found = triton_rules.check_trace(tpu_style, every_kernel=True)
    assert {v.rule for _, v in found} == {"power_of_two"}  # 24 x 128 = 3072 elements
    triton = _trace(_copy((32, 128), plgpu.CompilerParams(num_warps=4)), (96, 128))
    assert [v.rule for _, v in triton_rules.check_trace(triton)] == []


def test_edge_rule_follows_refs_into_loops():
    """An unmasked read of a ragged block inside a fori_loop is still found."""
    from jax.experimental import pallas as pl

    from jaxbench.evaluator.judge.gpu import triton_rules

    def body(x_ref, o_ref):
        def step(j, carry):
            o_ref[:, pl.ds(j * 64, 64)] = x_ref[:, pl.ds(j * 64, 64)] * 2
            return carry
        jax.lax.fori_loop(0, 2, step, 0)

    fn = _rows_of_32(body)

    found = triton_rules.check_trace(_trace(fn, (100, 128)))
    assert {v.rule for _, v in found} == {"edge_mask"}
    assert triton_rules.check_trace(_trace(fn, (96, 128))) == []


@pytest.mark.parametrize("wrap", ["jit", "named_call", "checkpoint", "custom_jvp", "switch",
                                  "when", "scan", "while", "cond_operands"])
def test_edge_rule_follows_refs_through_every_binder_triton_lowers(wrap):
    """Triton's lowering accepts jit, closed_call, custom_jvp_call, remat, scan, while and
    cond around ref accesses (run_scoped it does not lower); an unmasked ragged access
    hidden in any of them is still found."""
    from jax.experimental import pallas as pl

    from jaxbench.evaluator.judge.gpu import triton_rules

    def copy(o_ref, x_ref):
        o_ref[...] = x_ref[...] * 2

    @jax.custom_jvp
    def double(v):
        return v * 2
    double.defjvp(lambda p, t: (double(p[0]), t[0]))

    def body(x_ref, o_ref):
        first = pl.program_id(0) >= 0
        {"jit": lambda: jax.jit(copy)(o_ref, x_ref),
         "named_call": lambda: jax.named_call(copy, name="inner")(o_ref, x_ref),
         "checkpoint": lambda: jax.checkpoint(copy)(o_ref, x_ref),
         "custom_jvp": lambda: o_ref.__setitem__(Ellipsis, double(x_ref[...])),
         "switch": lambda: jax.lax.switch(pl.program_id(0) % 2, [lambda: None,
                                                                  lambda: copy(o_ref, x_ref)]),
         "when": lambda: pl.when(first)(lambda: copy(o_ref, x_ref)),
         "scan": lambda: jax.lax.scan(lambda c, _: (copy(o_ref, x_ref), (c, None))[1], 0,
                                      None, length=1),
         "while": lambda: jax.lax.while_loop(lambda i: i < 1,
                                             lambda i: (copy(o_ref, x_ref), i + 1)[1], 0),
         "cond_operands": lambda: jax.lax.cond(first, lambda a, b: copy(b, a),
                                               lambda a, b: None, x_ref, o_ref),
         }[wrap]()

    fn = _rows_of_32(body)

    assert {v.rule for _, v in triton_rules.check_trace(_trace(fn, (100, 128)))} == {"edge_mask"}
    assert triton_rules.check_trace(_trace(fn, (96, 128))) == []


@pytest.mark.parametrize("masked", [False, True])
def test_edge_rule_covers_atomics(masked):
    """plgpu.atomic_add into a ragged output block writes past the array's end unless masked
    (the load is masked in both cases)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plgpu

    from jaxbench.evaluator.judge.gpu import triton_rules

    def body(x_ref, o_ref):
        rows = pl.program_id(0) * 32 + jnp.arange(32)[:, None]
        mask = jnp.broadcast_to(rows < 100, (32, 128))
        x = plgpu.load(x_ref, mask=mask, other=0.0)
        plgpu.atomic_add(o_ref, (slice(None), slice(None)), x, mask=mask if masked else None)

    fn = _rows_of_32(body)

    found = [v.subject for _, v in triton_rules.check_trace(_trace(fn, (100, 128)))]
    assert found == ([] if masked else ["output 0's block (32, 128) (ragged, unmasked)"])
