"""Seed kernel for 14p_ragged_dot on TPU: a tiled batched matmul.

Grid (G, M/bm, N/bn, K/bk); the group dimension is squeezed out of the blocks,
K is the innermost sequential reduction into a float32 VMEM accumulator.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _bmm_kernel(x_ref, w_ref, o_ref, acc_ref):
    k = pl.program_id(3)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(3) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def kernel(x, weights):
    g, m, k = x.shape
    n = weights.shape[2]
    bm, bn, bk = min(512, m), min(512, n), min(512, k)
    return pl.pallas_call(
        _bmm_kernel,
        out_shape=jax.ShapeDtypeStruct((g, m, n), x.dtype),
        grid=(g, m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((None, bm, bk), lambda gi, i, j, kk: (gi, i, kk)),
            pl.BlockSpec((None, bk, bn), lambda gi, i, j, kk: (gi, kk, j)),
        ],
        out_specs=pl.BlockSpec((None, bm, bn), lambda gi, i, j, kk: (gi, i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
    )(x, weights)
# copy 6
