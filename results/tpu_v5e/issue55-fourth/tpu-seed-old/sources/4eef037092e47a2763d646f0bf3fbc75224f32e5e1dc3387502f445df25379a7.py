"""Seed kernel for 38k_matmul_dropout_softmax on TPU: a two-pass softmax over the GEMM output.

1. Grid (M/bm, N/bn, K/bk), N and K sequential ("arbitrary"), float32 VMEM accumulator;
   the weight is in PyTorch (N, K) layout (x @ W^T). At the last K step the biased logits
   are rounded to the input dtype and stored, and folded into an online row max and
   row sum of exp (rescaled when the max grows), kept in (bm, 1) float32 scratches that
   live across N; the row statistics are written after the last N tile.
2. Grid (M/bm, N/bn), elementwise: out = exp(z - max) / sum.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NT = (((1,), (1,)), ((), ()))  # contract the last axis of both operands: a @ b^T


def _logits_kernel(x_ref, w_ref, b_ref, z_ref, m_out, l_out, acc_ref, m_ref, l_ref):
    j, k = pl.program_id(1), pl.program_id(2)
    last_j, last_k = pl.num_programs(1) - 1, pl.num_programs(2) - 1

    @pl.when((j == 0) & (k == 0))
    def _init_stats():
        m_ref[...] = jnp.full_like(m_ref, -jnp.inf)
        l_ref[...] = jnp.zeros_like(l_ref)

    @pl.when(k == 0)
    def _init_acc():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when(k == last_k)
    def _tile():
        z = (acc_ref[...] + b_ref[...].astype(jnp.float32)).astype(z_ref.dtype)
        z_ref[...] = z
        z = z.astype(jnp.float32)
        m_old = m_ref[...]
        m_new = jnp.maximum(m_old, jnp.max(z, axis=1, keepdims=True))
        l_ref[...] = l_ref[...] * jnp.exp(m_old - m_new) + jnp.sum(jnp.exp(z - m_new), axis=1,
                                                                    keepdims=True)
        m_ref[...] = m_new

    @pl.when((j == last_j) & (k == last_k))
    def _store():
        m_out[...] = m_ref[...]
        l_out[...] = l_ref[...]


def _normalize_kernel(z_ref, m_ref, l_ref, o_ref):
    p = jnp.exp(z_ref[...].astype(jnp.float32) - m_ref[...])
    o_ref[...] = (p / l_ref[...]).astype(o_ref.dtype)


def kernel(x, weight, bias):
    m, kd = x.shape
    n = weight.shape[0]
    bm, bn, bk = min(256, m), min(256, n), min(512, kd)
    stat = pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0))
    z, row_max, row_sum = pl.pallas_call(
        _logits_kernel,
        out_shape=(jax.ShapeDtypeStruct((m, n), x.dtype),
                   jax.ShapeDtypeStruct((m, 1), jnp.float32),
                   jax.ShapeDtypeStruct((m, 1), jnp.float32)),
        grid=(m // bm, n // bn, kd // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk)),
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=(pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), stat, stat),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32), pltpu.VMEM((bm, 1), jnp.float32),
                        pltpu.VMEM((bm, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary", "arbitrary")),
    )(x, weight, bias.reshape(1, n))

    bm2, bn2 = min(512, m), min(1024, n)
    stat2 = pl.BlockSpec((bm2, 1), lambda i, j: (i, 0))
    return pl.pallas_call(
        _normalize_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm2, n // bn2),
        in_specs=[pl.BlockSpec((bm2, bn2), lambda i, j: (i, j)), stat2, stat2],
        out_specs=pl.BlockSpec((bm2, bn2), lambda i, j: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(z, row_max, row_sum)
