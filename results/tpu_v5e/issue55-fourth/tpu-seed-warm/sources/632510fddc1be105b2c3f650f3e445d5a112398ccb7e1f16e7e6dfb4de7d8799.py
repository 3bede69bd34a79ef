"""Seed kernel for 5p_flex_attention on TPU: flash attention with an additive score bias.

Grid (B, H, S/bq, S/bk); the kv-block axis is the innermost, sequential
("arbitrary") reduction. Each step reads the matching (bq, bk) tile of the
per-head bias rel_pos_bias[h], adds it to the scaled scores, applies the causal
mask and updates the online softmax (running max, running sum and the output
accumulator in float32 VMEM scratch). kv blocks above the diagonal are skipped.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NEG = -1e30


def _flash_bias_kernel(q_ref, k_ref, v_ref, bias_ref, o_ref, m_ref, l_ref, acc_ref, *, scale,
                       bq, bk):
    qi = pl.program_id(2)
    kj = pl.program_id(3)

    @pl.when(kj == 0)
    def _init():
        m_ref[...] = jnp.full(m_ref.shape, _NEG, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    @pl.when(kj * bk <= qi * bq + (bq - 1))
    def _compute():
        s = jax.lax.dot_general(q_ref[...], k_ref[...], (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32) * scale
        s = s + bias_ref[...].astype(jnp.float32)
        rows = qi * bq + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)
        cols = kj * bk + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)
        s = jnp.where(cols <= rows, s, _NEG)
        m_prev = m_ref[...][:, :1]
        l_prev = l_ref[...][:, :1]
        m_new = jnp.maximum(m_prev, jnp.max(s, axis=1, keepdims=True))
        p = jnp.exp(s - m_new)
        alpha = jnp.exp(m_prev - m_new)
        l_new = alpha * l_prev + jnp.sum(p, axis=1, keepdims=True)
        pv = jnp.dot(p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
        acc_ref[...] = alpha * acc_ref[...] + pv
        m_ref[...] = jnp.broadcast_to(m_new, m_ref.shape)
        l_ref[...] = jnp.broadcast_to(l_new, l_ref.shape)

    @pl.when(kj == pl.num_programs(3) - 1)
    def _store():
        o_ref[...] = (acc_ref[...] / l_ref[...][:, :1]).astype(o_ref.dtype)


def kernel(q, k, v, rel_pos_bias):
    b, h, s, d = q.shape
    bq, bk = min(128, s), min(128, s)
    body = functools.partial(_flash_bias_kernel, scale=1.0 / math.sqrt(d), bq=bq, bk=bk)
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(b, h, s // bq, s // bk),
        in_specs=[
            pl.BlockSpec((None, None, bq, d), lambda bi, hi, qi, kj: (bi, hi, qi, 0)),
            pl.BlockSpec((None, None, bk, d), lambda bi, hi, qi, kj: (bi, hi, kj, 0)),
            pl.BlockSpec((None, None, bk, d), lambda bi, hi, qi, kj: (bi, hi, kj, 0)),
            pl.BlockSpec((None, bq, bk), lambda bi, hi, qi, kj: (hi, qi, kj)),
        ],
        out_specs=pl.BlockSpec((None, None, bq, d), lambda bi, hi, qi, kj: (bi, hi, qi, 0)),
        scratch_shapes=[
            pltpu.VMEM((bq, 128), jnp.float32),
            pltpu.VMEM((bq, 128), jnp.float32),
            pltpu.VMEM((bq, d), jnp.float32),
        ],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
    )(q, k, v, rel_pos_bias)
