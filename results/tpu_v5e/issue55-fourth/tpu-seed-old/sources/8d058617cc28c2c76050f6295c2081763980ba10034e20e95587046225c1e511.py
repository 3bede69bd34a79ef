"""Seed kernel for 32k_gemm_sigmoid_logsumexp on TPU.

Two pallas_calls:
1. a tiled ``h = sigmoid(x @ w1^T + b1)`` (float32 VMEM accumulator over an "arbitrary"
   K axis, bf16 output);
2. a tiled ``z = h @ w2^T + b2`` whose output axis O is sequential ("arbitrary") next to
   the H reduction axis: each finished (bm, bn) tile of z is folded into a running
   (online) logsumexp per row (running max and rescaled sum in (bm, 1) scratches), and
   the (bm, 1) result is written after the last O block.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NT = (((1,), (1,)), ((), ()))  # contract the last axis of both operands (W in (out, in) layout)


def _linear_sigmoid_kernel(x_ref, w_ref, b_ref, h_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        a = acc_ref[...] + b_ref[...].astype(jnp.float32)
        h_ref[...] = (1.0 / (1.0 + jnp.exp(-a))).astype(h_ref.dtype)


def _linear_lse_kernel(h_ref, w_ref, b_ref, o_ref, acc_ref, max_ref, sum_ref):
    j, k = pl.program_id(1), pl.program_id(2)
    nj, nk = pl.num_programs(1), pl.num_programs(2)

    @pl.when((j == 0) & (k == 0))
    def _init_row():
        max_ref[...] = jnp.full_like(max_ref, -1e30)
        sum_ref[...] = jnp.zeros_like(sum_ref)

    @pl.when(k == 0)
    def _init_tile():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(h_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when(k == nk - 1)
    def _fold():
        z = acc_ref[...] + b_ref[...].astype(jnp.float32)
        m_old = max_ref[...]
        m_new = jnp.maximum(m_old, jnp.max(z, axis=1, keepdims=True))
        sum_ref[...] = (sum_ref[...] * jnp.exp(m_old - m_new)
                        + jnp.sum(jnp.exp(z - m_new), axis=1, keepdims=True))
        max_ref[...] = m_new

    @pl.when((j == nj - 1) & (k == nk - 1))
    def _store():
        o_ref[...] = (max_ref[...] + jnp.log(sum_ref[...])).astype(o_ref.dtype)


def kernel(x, w1, b1, w2, b2):
    m, k = x.shape
    hdim, odim = w1.shape[0], w2.shape[0]
    bm, bh, bk = min(256, m), min(256, hdim), min(256, k)
    h = pl.pallas_call(
        _linear_sigmoid_kernel,
        out_shape=jax.ShapeDtypeStruct((m, hdim), x.dtype),
        grid=(m // bm, hdim // bh, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bh, bk), lambda i, j, kk: (j, kk)),
            pl.BlockSpec((1, bh), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bh), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bh), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, w1, b1.reshape(1, hdim))
    bo, bk2 = min(256, odim), min(256, hdim)
    out = pl.pallas_call(
        _linear_lse_kernel,
        out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype),
        grid=(m // bm, odim // bo, hdim // bk2),
        in_specs=[
            pl.BlockSpec((bm, bk2), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bo, bk2), lambda i, j, kk: (j, kk)),
            pl.BlockSpec((1, bo), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, bo), jnp.float32), pltpu.VMEM((bm, 1), jnp.float32),
                        pltpu.VMEM((bm, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary", "arbitrary")),
    )(h, w2, b2.reshape(1, odim))
    return out.reshape(m)
