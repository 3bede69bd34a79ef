"""Cheat (8p_gemm): the tiled matmul with its K reduction axis marked "parallel" (so a compiler
may split it across cores) while every K step accumulates into the same output tile. Run in
order it is correct; on two cores the steps race. The TPU interpreter's race detection (two
simulated cores, shuffled parallel grid order) reports it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    acc = o_ref[...].astype(jnp.float32)
    acc += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = acc.astype(o_ref.dtype)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = 128, 128, 128
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(k // bk, m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, bk), lambda kk, i, j: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda kk, i, j: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda kk, i, j: (i, j)),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel")),
    )(a, b).astype(a.dtype)
