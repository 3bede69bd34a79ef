"""Original TPU-style seed for l2_swiglu: (512, 512) output tiles, K in 512-wide steps.

Grid (M/bm, N/bn, K/bk) with K innermost ("arbitrary"). Each step multiplies the X block
by the matching blocks of W_g and W_u into two float32 VMEM accumulators; the last K step
applies SiLU to the gate, multiplies by the up projection and stores the tile. VMEM at full
size: X, W_g, W_u and output blocks of 1 MiB each, double-buffered (8 MiB), plus two 1 MiB
accumulators: 10 MiB, under the 32 MiB scoped default.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _gate(y):
    return y * jax.nn.sigmoid(y)


def _glu_kernel(x_ref, wg_ref, wu_ref, o_ref, accg_ref, accu_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        accg_ref[...] = jnp.zeros_like(accg_ref)
        accu_ref[...] = jnp.zeros_like(accu_ref)

    x = x_ref[...]
    accg_ref[...] += jnp.dot(x, wg_ref[...], preferred_element_type=jnp.float32)
    accu_ref[...] += jnp.dot(x, wu_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = (_gate(accg_ref[...]) * accu_ref[...]).astype(o_ref.dtype)


def kernel(x, w_g, w_u):
    m, k = x.shape
    n = w_g.shape[1]
    bm, bn, bk = min(512, m), min(512, n), min(512, k)
    w_spec = pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))
    return pl.pallas_call(
        _glu_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), w_spec, w_spec],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32), pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, w_g, w_u)
