"""Seed kernel for 9p_swiglu_mlp on TPU: two tiled Pallas matmul kernels.

Kernel 1, grid (M/bm, F/bf, D/bk): the gate and up projections share the x
tile and accumulate into two float32 VMEM accumulators; on the last K step the
SwiGLU epilogue ``silu(g) * u`` writes h (M, F) in bf16. Kernel 2, grid
(M/bm, D/bn, F/bk): ``h @ down`` with a float32 accumulator.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _gate_up_kernel(x_ref, g_ref, u_ref, h_ref, gacc_ref, uacc_ref):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        gacc_ref[...] = jnp.zeros_like(gacc_ref)
        uacc_ref[...] = jnp.zeros_like(uacc_ref)

    x = x_ref[...]
    gacc_ref[...] += jnp.dot(x, g_ref[...], preferred_element_type=jnp.float32)
    uacc_ref[...] += jnp.dot(x, u_ref[...], preferred_element_type=jnp.float32)

    @pl.when(kk == pl.num_programs(2) - 1)
    def _store():
        g = gacc_ref[...]
        h_ref[...] = (g * jax.nn.sigmoid(g) * uacc_ref[...]).astype(h_ref.dtype)


def _down_kernel(h_ref, w_ref, o_ref, acc_ref):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(h_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(kk == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def kernel(x, gate, up, down):
    b, s, d = x.shape
    f = gate.shape[1]
    m = b * s
    x2 = x.reshape(m, d)
    bm, bf, bk = min(256, m), min(256, f), min(256, d)
    h = pl.pallas_call(
        _gate_up_kernel,
        out_shape=jax.ShapeDtypeStruct((m, f), x.dtype),
        grid=(m // bm, f // bf, d // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bf), lambda i, j, kk: (kk, j)),
            pl.BlockSpec((bk, bf), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bf), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bf), jnp.float32), pltpu.VMEM((bm, bf), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x2, gate, up)
    bn, bk2 = min(256, d), min(256, f)
    out = pl.pallas_call(
        _down_kernel,
        out_shape=jax.ShapeDtypeStruct((m, d), x.dtype),
        grid=(m // bm, d // bn, f // bk2),
        in_specs=[
            pl.BlockSpec((bm, bk2), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk2, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(h, down)
    return out.reshape(b, s, d)
