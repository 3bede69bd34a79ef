"""Expert kernel for 3p_mla_attention (DeepSeek-V3 MLA) on TPU.

No library kernel covers MLA, so this is a hand-written pipeline of four
Pallas kernels, tuned against the seed:
- fused down-projections: one kernel computes x@q_down and x@kv_down together,
  so the (B*S, 7168) activations stream from HBM once (two float32 VMEM
  accumulators, K innermost "arbitrary");
- fused kv up-projections: one kernel computes c@k_up and c@v_up from the same
  latent tile, read straight out of the [c | k_rope] buffer (no slice copy);
- large-tile matmuls (up to 512 x 1024 x 1024) for q_up and o_proj;
- flash attention with 512 x 512 blocks: causally dead kv blocks are neither
  computed nor fetched (their index map is clamped to the last live block, so
  the pipeline skips the DMA), only blocks that straddle the diagonal pay for
  the mask, and per-head q/k/v/output tiles are addressed directly in the
  (B, S, H*D) layouts. Scores = q_nope·k_nope + q_rope·k_rope (k_rope shared
  over heads), scaled by 1/sqrt(DN+DR) in float32.
RoPE (rotate-half, theta=10000) and the q split are elementwise glue that XLA
fuses into one pass.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NEG = -1e30
_VMEM_LIMIT = 64 * 1024 * 1024


def _pick(n, candidates):
    return next((c for c in candidates if n % c == 0), n)


def _params(*semantics):
    return pltpu.CompilerParams(dimension_semantics=semantics, vmem_limit_bytes=_VMEM_LIMIT)


# ---------------------------------------------------------------- projections

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
    bm = _pick(m, (512, 256, 128))
    bn = _pick(n, (1024, 512, 256, 128))
    bk = _pick(k, (1024, 512, 256, 128))
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
        compiler_params=_params("parallel", "parallel", "arbitrary"),
    )(a, b)


def _down_kernel(x_ref, wq_ref, wkv_ref, q_ref, kv_ref, accq_ref, acckv_ref):
    kk = pl.program_id(1)

    @pl.when(kk == 0)
    def _init():
        accq_ref[...] = jnp.zeros_like(accq_ref)
        acckv_ref[...] = jnp.zeros_like(acckv_ref)

    x = x_ref[...]
    accq_ref[...] += jnp.dot(x, wq_ref[...], preferred_element_type=jnp.float32)
    acckv_ref[...] += jnp.dot(x, wkv_ref[...], preferred_element_type=jnp.float32)

    @pl.when(kk == pl.num_programs(1) - 1)
    def _store():
        q_ref[...] = accq_ref[...].astype(q_ref.dtype)
        kv_ref[...] = acckv_ref[...].astype(kv_ref.dtype)


def _down_proj(x2, q_down, kv_down):
    """(x2 @ q_down, x2 @ kv_down) with x2 read once; both outputs full width."""
    m, k = x2.shape
    nq, nkv = q_down.shape[1], kv_down.shape[1]
    bm, bk = _pick(m, (512, 256, 128)), _pick(k, (512, 256, 128))
    return pl.pallas_call(
        _down_kernel,
        out_shape=(jax.ShapeDtypeStruct((m, nq), x2.dtype),
                   jax.ShapeDtypeStruct((m, nkv), x2.dtype)),
        grid=(m // bm, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, kk: (i, kk)),
            pl.BlockSpec((bk, nq), lambda i, kk: (kk, 0)),
            pl.BlockSpec((bk, nkv), lambda i, kk: (kk, 0)),
        ],
        out_specs=(pl.BlockSpec((bm, nq), lambda i, kk: (i, 0)),
                   pl.BlockSpec((bm, nkv), lambda i, kk: (i, 0))),
        scratch_shapes=[pltpu.VMEM((bm, nq), jnp.float32), pltpu.VMEM((bm, nkv), jnp.float32)],
        compiler_params=_params("parallel", "arbitrary"),
    )(x2, q_down, kv_down)


def _up_kernel(c_ref, wk_ref, wv_ref, k_ref, v_ref):
    c = c_ref[...]
    k_ref[...] = jnp.dot(c, wk_ref[...], preferred_element_type=jnp.float32).astype(k_ref.dtype)
    v_ref[...] = jnp.dot(c, wv_ref[...], preferred_element_type=jnp.float32).astype(v_ref.dtype)


def _kv_up(kv, k_up, v_up):
    """(c @ k_up, c @ v_up) with c = kv[:, :KVL] read in place, once per row tile."""
    m = kv.shape[0]
    kvl, nk = k_up.shape
    bm = _pick(m, (512, 256, 128))
    bn = _pick(nk, (1024, 512, 256, 128))
    return pl.pallas_call(
        _up_kernel,
        out_shape=(jax.ShapeDtypeStruct((m, nk), kv.dtype),
                   jax.ShapeDtypeStruct((m, v_up.shape[1]), kv.dtype)),
        grid=(m // bm, nk // bn),
        in_specs=[
            pl.BlockSpec((bm, kvl), lambda i, j: (i, 0)),
            pl.BlockSpec((kvl, bn), lambda i, j: (0, j)),
            pl.BlockSpec((kvl, bn), lambda i, j: (0, j)),
        ],
        out_specs=(pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
                   pl.BlockSpec((bm, bn), lambda i, j: (i, j))),
        compiler_params=_params("parallel", "parallel"),
    )(kv, k_up, v_up)


# ------------------------------------------------------------------- RoPE glue

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


# ------------------------------------------------------------------ attention

def _attn_kernel(qn_ref, qr_ref, kn_ref, kr_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *,
                 scale, bq, bk):
    qi = pl.program_id(2)
    kj = pl.program_id(3)
    q_first, q_last = qi * bq, qi * bq + (bq - 1)
    k_first, k_last = kj * bk, kj * bk + (bk - 1)

    @pl.when(kj == 0)
    def _init():
        m_ref[...] = jnp.full(m_ref.shape, _NEG, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    def update(masked):
        dims = (((1,), (1,)), ((), ()))
        s = jax.lax.dot_general(qn_ref[...], kn_ref[...], dims, preferred_element_type=jnp.float32)
        s = s + jax.lax.dot_general(qr_ref[...], kr_ref[...], dims,
                                    preferred_element_type=jnp.float32)
        s = s * scale
        if masked:
            rows = q_first + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)
            cols = k_first + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)
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

    @pl.when(k_last <= q_first)  # entirely below the diagonal: no mask
    def _full():
        update(False)

    @pl.when(jnp.logical_and(k_last > q_first, k_first <= q_last))  # straddles the diagonal
    def _diag():
        update(True)

    @pl.when(kj == pl.num_programs(3) - 1)
    def _store():
        o_ref[...] = (acc_ref[...] / l_ref[...][:, :1]).astype(o_ref.dtype)


def _attention(q_nope, q_rope, k_nope, k_rope, v, *, heads, dn, dr, dv):
    """q_nope/k_nope (B, S, H*DN), q_rope (B, H, S, DR), k_rope (B, S, DR), v (B, S, H*DV)."""
    b, s, _ = q_nope.shape
    bq = bk = _pick(s, (512, 256, 128))

    def kv_block(qi, kj):
        # Dead blocks above the diagonal re-use the last live block: no new DMA.
        return jax.lax.min(kj, jax.lax.div(qi * bq + (bq - 1), bk))

    body = functools.partial(_attn_kernel, scale=1.0 / math.sqrt(dn + dr), bq=bq, bk=bk)
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct((b, s, heads * dv), v.dtype),
        grid=(b, heads, s // bq, s // bk),
        in_specs=[
            pl.BlockSpec((None, bq, dn), lambda bi, hi, qi, kj: (bi, qi, hi)),
            pl.BlockSpec((None, None, bq, dr), lambda bi, hi, qi, kj: (bi, hi, qi, 0)),
            pl.BlockSpec((None, bk, dn), lambda bi, hi, qi, kj: (bi, kv_block(qi, kj), hi)),
            pl.BlockSpec((None, bk, dr), lambda bi, hi, qi, kj: (bi, kv_block(qi, kj), 0)),
            pl.BlockSpec((None, bk, dv), lambda bi, hi, qi, kj: (bi, kv_block(qi, kj), hi)),
        ],
        out_specs=pl.BlockSpec((None, bq, dv), lambda bi, hi, qi, kj: (bi, qi, hi)),
        scratch_shapes=[
            pltpu.VMEM((bq, 128), jnp.float32),
            pltpu.VMEM((bq, 128), jnp.float32),
            pltpu.VMEM((bq, dv), jnp.float32),
        ],
        compiler_params=_params("parallel", "parallel", "parallel", "arbitrary"),
    )(q_nope, q_rope, k_nope, k_rope, v)


def kernel(x, q_down, q_up, kv_down, k_up, v_up, o_proj):
    b, s, hid = x.shape
    kvl = k_up.shape[0]
    dr = kv_down.shape[1] - kvl
    h = (q_up.shape[1] - k_up.shape[1]) // dr
    dn, dv = k_up.shape[1] // h, v_up.shape[1] // h
    x2 = x.reshape(b * s, hid)

    cq, kv = _down_proj(x2, q_down, kv_down)
    q = _matmul(cq, q_up).reshape(b, s, h, dn + dr)
    q_nope = q[..., :dn].reshape(b, s, h * dn)
    q_rope = jnp.transpose(_rope(q[..., dn:]), (0, 2, 1, 3))  # (B, H, S, DR)
    k_rope = _rope(kv[:, kvl:].reshape(b, s, dr))
    k_nope, v = _kv_up(kv, k_up, v_up)

    o = _attention(q_nope, q_rope, k_nope.reshape(b, s, h * dn), k_rope,
                   v.reshape(b, s, h * dv), heads=h, dn=dn, dr=dr, dv=dv)
    return _matmul(o.reshape(b * s, h * dv), o_proj).reshape(b, s, hid)
