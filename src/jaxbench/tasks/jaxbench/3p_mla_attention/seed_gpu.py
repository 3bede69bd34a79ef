"""Seed kernel for 3p_mla_attention (DeepSeek-V3 MLA) on NVIDIA GPUs (Pallas Triton backend).

Two Pallas kernels:
- a tiled matmul (each program one (bm, bn) tile, a ``fori_loop`` over K in
  bk-wide slices with a float32 register accumulator) for every projection;
- a flash-attention kernel, grid (B, H, S/bq), whose scores are the nope part
  (q_nope·k_nope, per head) plus the rope part (q_rope·k_rope, k_rope shared by
  all heads), scaled by 1/sqrt(DN+DR); each program loops over the kv blocks up
  to the diagonal with an online softmax in registers.
The RoPE (rotate-half, theta=10000) and the q/kv splits are elementwise glue
outside the kernels.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NEG = -1e30


def _pick(n, candidates=(128, 64, 32, 16)):
    return next(c for c in candidates if n % c == 0)


def _mm_kernel(a_ref, b_ref, o_ref, *, bk, num_k):
    def body(step, acc):
        a = a_ref[:, pl.ds(step * bk, bk)]
        b = b_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(a, b, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(o_ref.shape, jnp.float32))
    o_ref[...] = acc.astype(o_ref.dtype)


def _matmul(a, b):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = _pick(m), _pick(n), _pick(k, (64, 32, 16))
    return pl.pallas_call(
        functools.partial(_mm_kernel, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, bn), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
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


def _attn_kernel(qn_ref, qr_ref, kn_ref, kr_ref, v_ref, o_ref, *, scale, bq, bk):
    qi = pl.program_id(2)
    qn = qn_ref[...]
    qr = qr_ref[...]
    rows = qi * bq + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)
    dims = (((1,), (1,)), ((), ()))

    def body(j, carry):
        m_prev, l_prev, acc = carry
        kn = kn_ref[pl.ds(j * bk, bk), :]
        kr = kr_ref[pl.ds(j * bk, bk), :]
        v = v_ref[pl.ds(j * bk, bk), :]
        s = (jax.lax.dot_general(qn, kn, dims, preferred_element_type=jnp.float32)
             + jax.lax.dot_general(qr, kr, dims, preferred_element_type=jnp.float32)) * scale
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


def _attention(q_nope, q_rope, k_nope, k_rope, v, *, heads, dn, dr, dv):
    """q_nope/k_nope (B, S, H*DN), q_rope (B, H, S, DR), k_rope (B, S, DR), v (B, S, H*DV)."""
    b, s, _ = q_nope.shape
    bq, bk = min(64, s), min(64, s)
    body = functools.partial(_attn_kernel, scale=1.0 / math.sqrt(dn + dr), bq=bq, bk=bk)
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct((b, s, heads * dv), v.dtype),
        grid=(b, heads, s // bq),
        in_specs=[
            pl.BlockSpec((None, bq, dn), lambda bi, hi, qi: (bi, qi, hi)),
            pl.BlockSpec((None, None, bq, dr), lambda bi, hi, qi: (bi, hi, qi, 0)),
            pl.BlockSpec((None, s, dn), lambda bi, hi, qi: (bi, 0, hi)),
            pl.BlockSpec((None, s, dr), lambda bi, hi, qi: (bi, 0, 0)),
            pl.BlockSpec((None, s, dv), lambda bi, hi, qi: (bi, 0, hi)),
        ],
        out_specs=pl.BlockSpec((None, bq, dv), lambda bi, hi, qi: (bi, qi, hi)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
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
