"""Seed kernel for 3p_mla_attention (DeepSeek-V3 MLA) on TPU.

Two Pallas kernels:
- a tiled matmul (float32 VMEM accumulator, K innermost "arbitrary") used for
  every projection: x@q_down, @q_up, x@kv_down, c@k_up, c@v_up and o@o_proj;
- a flash-attention kernel, grid (B, H, S/bq, S/bk), whose scores are the sum
  of the nope part (q_nope·k_nope, per head) and the rope part (q_rope·k_rope,
  k_rope shared by all heads), scaled by 1/sqrt(DN+DR), causally masked, with
  an online softmax in float32 scratch. Per-head tiles of q_nope, k_nope, v and
  the output are read/written straight from/to the (B, S, H*D) layouts.
The RoPE (rotate-half, theta=10000) and the q/kv splits are elementwise glue
outside the kernels.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NEG = -1e30


def _pick(n, candidates=(512, 256, 128)):
    return next((c for c in candidates if n % c == 0), n)


def _mm_kernel(a_ref, b_ref, o_ref, acc_ref):
    kk = pl.program_id(2)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(kk == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _matmul(a, b):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = _pick(m), _pick(n), _pick(k)
    return pl.pallas_call(
        _mm_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(a, b)


def _rope(x, theta=10000.0):
    """Rotate-half RoPE over axis 1 (positions) of x (B, S, ..., R), float32 math."""
    s, r = x.shape[1], x.shape[-1]
    inv_freq = 1.0 / (theta ** (jnp.arange(0, r, 2, dtype=jnp.float32) / r))
    ang = jnp.arange(s, dtype=jnp.float32)[:, None] * inv_freq[None, :]
    cos = jnp.tile(jnp.cos(ang), (1, 2)).reshape((1, s) + (1,) * (x.ndim - 3) + (r,))
    sin = jnp.tile(jnp.sin(ang), (1, 2)).reshape((1, s) + (1,) * (x.ndim - 3) + (r,))
    xf = x.astype(jnp.float32)
    rot = jnp.concatenate([-xf[..., r // 2:], xf[..., : r // 2]], axis=-1)
    return (xf * cos + rot * sin).astype(x.dtype)


def _attn_kernel(qn_ref, qr_ref, kn_ref, kr_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *,
                 scale, bq, bk):
    qi = pl.program_id(2)
    kj = pl.program_id(3)

    @pl.when(kj == 0)
    def _init():
        m_ref[...] = jnp.full(m_ref.shape, _NEG, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    @pl.when(kj * bk <= qi * bq + (bq - 1))
    def _compute():
        dims = (((1,), (1,)), ((), ()))
        s = jax.lax.dot_general(qn_ref[...], kn_ref[...], dims, preferred_element_type=jnp.float32)
        s = s + jax.lax.dot_general(qr_ref[...], kr_ref[...], dims,
                                    preferred_element_type=jnp.float32)
        s = s * scale
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


def _attention(q_nope, q_rope, k_nope, k_rope, v, *, heads, dn, dr, dv):
    """q_nope/k_nope (B, S, H*DN), q_rope (B, H, S, DR), k_rope (B, S, DR), v (B, S, H*DV)."""
    b, s, _ = q_nope.shape
    bq, bk = min(128, s), min(128, s)
    body = functools.partial(_attn_kernel, scale=1.0 / math.sqrt(dn + dr), bq=bq, bk=bk)
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct((b, s, heads * dv), v.dtype),
        grid=(b, heads, s // bq, s // bk),
        in_specs=[
            pl.BlockSpec((None, bq, dn), lambda bi, hi, qi, kj: (bi, qi, hi)),
            pl.BlockSpec((None, None, bq, dr), lambda bi, hi, qi, kj: (bi, hi, qi, 0)),
            pl.BlockSpec((None, bk, dn), lambda bi, hi, qi, kj: (bi, kj, hi)),
            pl.BlockSpec((None, bk, dr), lambda bi, hi, qi, kj: (bi, kj, 0)),
            pl.BlockSpec((None, bk, dv), lambda bi, hi, qi, kj: (bi, kj, hi)),
        ],
        out_specs=pl.BlockSpec((None, bq, dv), lambda bi, hi, qi, kj: (bi, qi, hi)),
        scratch_shapes=[
            pltpu.VMEM((bq, 128), jnp.float32),
            pltpu.VMEM((bq, 128), jnp.float32),
            pltpu.VMEM((bq, dv), jnp.float32),
        ],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
    )(q_nope, q_rope, k_nope, k_rope, v)


def kernel(x, q_down, q_up, kv_down, k_up, v_up, o_proj):
    b, s, hid = x.shape
    kvl = k_up.shape[0]
    dr = kv_down.shape[1] - kvl
    h = (q_up.shape[1] - k_up.shape[1]) // dr
    dn, dv = k_up.shape[1] // h, v_up.shape[1] // h
    x2 = x.reshape(b * s, hid)

    q = _matmul(_matmul(x2, q_down), q_up).reshape(b, s, h, dn + dr)
    q_nope = q[..., :dn].reshape(b, s, h * dn)
    q_rope = jnp.transpose(_rope(q[..., dn:]), (0, 2, 1, 3))  # (B, H, S, DR)

    kv = _matmul(x2, kv_down)
    c = kv[:, :kvl]
    k_rope = _rope(kv[:, kvl:].reshape(b, s, dr))
    k_nope = _matmul(c, k_up).reshape(b, s, h * dn)
    v = _matmul(c, v_up).reshape(b, s, h * dv)

    o = _attention(q_nope, q_rope, k_nope, k_rope, v, heads=h, dn=dn, dr=dr, dv=dv)
    return _matmul(o.reshape(b * s, h * dv), o_proj).reshape(b, s, hid)
