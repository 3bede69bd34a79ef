"""Seed kernel for 19k_matmul_subtract_multiply_relu on TPU: tiled matmul with a fused epilogue.

Grid (M/bm, N/bn, K/bk) with a float32 VMEM accumulator over the sequential K
axis; on the last K step the tile gets ``relu((acc + b - 2) * 1.5)`` and is stored.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(kk == pl.num_programs(2) - 1)
    def _store():
        y = acc_ref[...] + b_ref[...].astype(jnp.float32)
        o_ref[...] = jnp.maximum((y - 2.0) * 1.5, 0.0).astype(o_ref.dtype)


def kernel(x, w, b):
    m, k = x.shape
    n = w.shape[1]
    bm, bn, bk = min(512, m), min(512, n), min(512, k)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, w, b.reshape(1, n))
