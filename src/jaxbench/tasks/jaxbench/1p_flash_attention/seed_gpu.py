"""Seed kernel for 1p_flash_attention on NVIDIA GPUs (Pallas Triton backend).

One program per (query block, batch, head). It loops over the KV blocks up to
and including the diagonal (blocks above it are never visited), keeping the
running max, denominator and output accumulator in registers (online softmax).
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NEG = -1e30


def _flash_kernel(q_ref, k_ref, v_ref, o_ref, *, scale, bq, bk):
    qi = pl.program_id(0)
    q = q_ref[...]
    q_start = qi * bq
    rows = q_start + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)

    def body(ki, carry):
        m_prev, l_prev, acc = carry
        k = k_ref[pl.ds(ki * bk, bk), :]
        v = v_ref[pl.ds(ki * bk, bk), :]
        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32) * scale
        cols = ki * bk + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)
        s = jnp.where(cols <= rows, s, _NEG)
        m_new = jnp.maximum(m_prev, s.max(axis=1))
        alpha = jnp.exp(m_prev - m_new)
        p = jnp.exp(s - m_new[:, None])
        l_new = alpha * l_prev + p.sum(axis=1)
        acc = alpha[:, None] * acc + jnp.dot(p.astype(v.dtype), v,
                                             preferred_element_type=jnp.float32)
        return m_new, l_new, acc

    d = q_ref.shape[-1]
    init = (jnp.full((bq,), _NEG, jnp.float32), jnp.zeros((bq,), jnp.float32),
            jnp.zeros((bq, d), jnp.float32))
    num_kv = jax.lax.div(q_start + bq + bk - 1, bk)  # KV blocks up to the diagonal
    _, l_fin, acc = jax.lax.fori_loop(0, num_kv, body, init)
    o_ref[...] = (acc / l_fin[:, None]).astype(o_ref.dtype)


def kernel(q, k, v):
    b, h, s, d = q.shape
    bq, bk = min(64, s), min(64, s)
    return pl.pallas_call(
        functools.partial(_flash_kernel, scale=1.0 / math.sqrt(d), bq=bq, bk=bk),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(s // bq, b, h),
        in_specs=[
            pl.BlockSpec((None, None, bq, d), lambda qi, bi, hi: (bi, hi, qi, 0)),
            pl.BlockSpec((None, None, s, d), lambda qi, bi, hi: (bi, hi, 0, 0)),
            pl.BlockSpec((None, None, s, d), lambda qi, bi, hi: (bi, hi, 0, 0)),
        ],
        out_specs=pl.BlockSpec((None, None, bq, d), lambda qi, bi, hi: (bi, hi, qi, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(q, k, v)
