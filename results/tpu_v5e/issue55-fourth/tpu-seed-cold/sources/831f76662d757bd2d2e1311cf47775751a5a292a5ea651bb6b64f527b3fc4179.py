"""Seed kernel for 1p_flash_attention on TPU: flash attention with an online softmax.

Grid (B, H, S/bq, S/bk); the KV-block axis is the innermost, sequential
("arbitrary") reduction. Running max, running denominator and the output
accumulator live in float32 VMEM scratch. KV blocks entirely above the
diagonal are skipped (their index map is clamped so no new block is fetched),
and only blocks crossing the diagonal apply the causal mask.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NEG = -1e30


def _flash_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, scale, bq, bk):
    qi = pl.program_id(2)
    ki = pl.program_id(3)

    @pl.when(ki == 0)
    def _init():
        m_ref[...] = jnp.full_like(m_ref, _NEG)
        l_ref[...] = jnp.zeros_like(l_ref)
        acc_ref[...] = jnp.zeros_like(acc_ref)

    q_start = qi * bq
    k_start = ki * bk

    def _step(masked):
        q = q_ref[...]
        k = k_ref[...]
        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32) * scale
        if masked:
            rows = q_start + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)
            cols = k_start + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
            s = jnp.where(cols <= rows, s, _NEG)
        m_prev = m_ref[...]
        m_new = jnp.maximum(m_prev, s.max(axis=1, keepdims=True))
        alpha = jnp.exp(m_prev - m_new)
        p = jnp.exp(s - m_new)
        l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(
            p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
        m_ref[...] = m_new

    # Block fully below the diagonal: no mask needed.
    @pl.when(k_start + bk - 1 <= q_start)
    def _full():
        _step(masked=False)

    # Block crossing the diagonal: apply the causal mask.
    @pl.when(jnp.logical_and(k_start + bk - 1 > q_start, k_start <= q_start + bq - 1))
    def _diag():
        _step(masked=True)

    @pl.when(ki == pl.num_programs(3) - 1)
    def _store():
        o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)


def kernel(q, k, v):
    b, h, s, d = q.shape
    bq, bk = min(128, s), min(128, s)

    def kv_index(bi, hi, qi, ki):
        # Clamp to the last block this query block needs, so skipped steps refetch nothing.
        last = jax.lax.div(qi * bq + bq - 1, bk)
        return (bi, hi, jnp.minimum(ki, last), 0)

    return pl.pallas_call(
        functools.partial(_flash_kernel, scale=1.0 / math.sqrt(d), bq=bq, bk=bk),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(b, h, s // bq, s // bk),
        in_specs=[
            pl.BlockSpec((None, None, bq, d), lambda bi, hi, qi, ki: (bi, hi, qi, 0)),
            pl.BlockSpec((None, None, bk, d), kv_index),
            pl.BlockSpec((None, None, bk, d), kv_index),
        ],
        out_specs=pl.BlockSpec((None, None, bq, d), lambda bi, hi, qi, ki: (bi, hi, qi, 0)),
        scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
    )(q, k, v)
