"""Cheat (8p_gemm, GPU): a Triton grid (M/bm, N/bn, K/bk) whose K programs all accumulate into
the same output block. Run in order (the interpreter) it is right; on a GPU the programs run
in parallel and race. The GPU race rule evaluates the output index map over the grid."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _kernel(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = 64, 64, 64
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(a, b).astype(a.dtype)
