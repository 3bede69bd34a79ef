"""Seed kernel for 6p_paged_attention on TPU: flash-decoding over gathered pages.

Grid (sequence, kv block). Each step handles NP pages (NP*page_size tokens) of
one sequence. The page table and the kv lengths are scalar-prefetched into SMEM
and drive the BlockSpec index maps: operand i of step j fetches page
page_indices[s, j*NP + i], so the pipeline DMAs the scattered pages itself. Page
numbers past the sequence's last page are clamped to that page, so no new DMA is
issued for them, and their compute is skipped with pl.when.

Layout glue (free reshapes): the caches become (P, page_size, KV*D), so kv head h
is the lane-aligned slice [h*D, (h+1)*D); queries become (S, KV, G, D) so each
kv head's G query heads are one (G, D) tile. Online softmax per kv head with
float32 running max / sum / accumulator in VMEM scratch; cu_q_lens is
arange(S + 1) for decode and is not needed.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
MASK = -1e30


def _decode_kernel(lens_ref, pages_ref, q_ref, *refs, num_pages, page_size, kv_heads,
                   head_dim, scale):
    k_refs = refs[:num_pages]
    v_refs = refs[num_pages:2 * num_pages]
    o_ref, m_ref, l_ref, acc_ref = refs[2 * num_pages:]
    s = pl.program_id(0)
    j = pl.program_id(1)
    kv_len = lens_ref[s]
    block = num_pages * page_size

    @pl.when(j == 0)
    def _init():
        m_ref[...] = jnp.full_like(m_ref, MASK)
        l_ref[...] = jnp.zeros_like(l_ref)
        acc_ref[...] = jnp.zeros_like(acc_ref)

    @pl.when(j * block < kv_len)
    def _compute():
        k_all = jnp.concatenate([r[...] for r in k_refs], axis=0)   # (block, KV*D)
        v_all = jnp.concatenate([r[...] for r in v_refs], axis=0)
        pos = j * block + jax.lax.broadcasted_iota(jnp.int32, (q_ref.shape[1], block), 1)
        valid = pos < kv_len
        for h in range(kv_heads):
            q = q_ref[h]                                            # (G, D)
            k = k_all[:, h * head_dim:(h + 1) * head_dim]           # (block, D)
            v = v_all[:, h * head_dim:(h + 1) * head_dim]
            sc = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32) * scale
            sc = jnp.where(valid, sc, MASK)
            m_prev = m_ref[h]                                       # (G, 128), lane-broadcast
            m_new = jnp.maximum(m_prev, jnp.max(sc, axis=1, keepdims=True))
            alpha = jnp.exp(m_prev - m_new)
            p = jnp.where(valid, jnp.exp(sc - m_new[:, :1]), 0.0)
            l_ref[h] = alpha * l_ref[h] + jnp.sum(p, axis=1, keepdims=True)
            m_ref[h] = m_new
            acc_ref[h] = alpha[:, :1] * acc_ref[h] + jnp.dot(
                p.astype(v.dtype), v, preferred_element_type=jnp.float32)

    @pl.when(j == pl.num_programs(1) - 1)
    def _store():
        for h in range(kv_heads):
            o_ref[h] = (acc_ref[h] / l_ref[h][:, :1]).astype(o_ref.dtype)


def kernel(queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    del cu_q_lens  # always arange(S + 1): one query token per sequence
    s, h, d = queries.shape
    total_pages, page_size, kv, _ = k_pages.shape
    pps = page_indices.shape[1]
    g = h // kv
    num_pages = math.gcd(pps, 8)
    q = queries.reshape(s, kv, g, d)
    k_flat = k_pages.reshape(total_pages, page_size, kv * d)
    v_flat = v_pages.reshape(total_pages, page_size, kv * d)
    pages_flat = page_indices.reshape(-1).astype(jnp.int32)

    def page_spec(i):
        def index_map(si, j, lens, pages):
            last = jax.lax.div(jnp.maximum(lens[si], 1) - 1, page_size)  # non-negative: no floor
            return (pages[si * pps + jnp.minimum(j * num_pages + i, last)], 0, 0)
        return pl.BlockSpec((None, page_size, kv * d), index_map)

    q_spec = pl.BlockSpec((None, kv, g, d), lambda si, j, lens, pages: (si, 0, 0, 0))
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=2,
        grid=(s, pps // num_pages),
        in_specs=[q_spec] + [page_spec(i) for i in range(num_pages)] * 2,
        out_specs=q_spec,
        scratch_shapes=[pltpu.VMEM((kv, g, 128), jnp.float32),
                        pltpu.VMEM((kv, g, 128), jnp.float32),
                        pltpu.VMEM((kv, g, d), jnp.float32)],
    )
    out = pl.pallas_call(
        functools.partial(_decode_kernel, num_pages=num_pages, page_size=page_size,
                          kv_heads=kv, head_dim=d, scale=1.0 / math.sqrt(d)),
        out_shape=jax.ShapeDtypeStruct((s, kv, g, d), queries.dtype),
        grid_spec=grid_spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
    )(kv_lens.astype(jnp.int32), pages_flat, q,
      *([k_flat] * num_pages), *([v_flat] * num_pages))
    return out.reshape(s, h, d)
