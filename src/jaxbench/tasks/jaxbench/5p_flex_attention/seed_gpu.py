"""Seed kernel for 5p_flex_attention on NVIDIA GPUs (Pallas Triton backend).

Grid (B, H, S/bq): each program owns one (bq, D) query tile of one head and
loops over the kv blocks up to the diagonal with ``fori_loop``. Each iteration
loads the matching (bq, bk) slice of rel_pos_bias[h], adds it to the scaled
scores, masks causally and updates the online softmax held in registers.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NEG = -1e30


def _flash_bias_kernel(q_ref, k_ref, v_ref, bias_ref, o_ref, *, scale, bq, bk):
    qi = pl.program_id(2)
    q = q_ref[...]
    rows = qi * bq + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)

    def body(j, carry):
        m_prev, l_prev, acc = carry
        k = k_ref[pl.ds(j * bk, bk), :]
        v = v_ref[pl.ds(j * bk, bk), :]
        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32) * scale
        s = s + bias_ref[:, pl.ds(j * bk, bk)].astype(jnp.float32)
        cols = j * bk + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)
        s = jnp.where(cols <= rows, s, _NEG)
        m_new = jnp.maximum(m_prev, jnp.max(s, axis=1))
        p = jnp.exp(s - m_new[:, None])
        alpha = jnp.exp(m_prev - m_new)
        l_new = alpha * l_prev + jnp.sum(p, axis=1)
        acc = acc * alpha[:, None] + jnp.dot(p.astype(v.dtype), v,
                                             preferred_element_type=jnp.float32)
        return m_new, l_new, acc

    num_kv = ((qi + 1) * bq + bk - 1) // bk
    init = (jnp.full((bq,), _NEG, jnp.float32), jnp.zeros((bq,), jnp.float32),
            jnp.zeros(o_ref.shape, jnp.float32))
    _, l, acc = jax.lax.fori_loop(0, num_kv, body, init)
    o_ref[...] = (acc / l[:, None]).astype(o_ref.dtype)


def kernel(q, k, v, rel_pos_bias):
    b, h, s, d = q.shape
    bq, bk = min(64, s), min(64, s)
    body = functools.partial(_flash_bias_kernel, scale=1.0 / math.sqrt(d), bq=bq, bk=bk)
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(b, h, s // bq),
        in_specs=[
            pl.BlockSpec((None, None, bq, d), lambda bi, hi, qi: (bi, hi, qi, 0)),
            pl.BlockSpec((None, None, s, d), lambda bi, hi, qi: (bi, hi, 0, 0)),
            pl.BlockSpec((None, None, s, d), lambda bi, hi, qi: (bi, hi, 0, 0)),
            pl.BlockSpec((None, bq, s), lambda bi, hi, qi: (hi, qi, 0)),
        ],
        out_specs=pl.BlockSpec((None, None, bq, d), lambda bi, hi, qi: (bi, hi, qi, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(q, k, v, rel_pos_bias)
