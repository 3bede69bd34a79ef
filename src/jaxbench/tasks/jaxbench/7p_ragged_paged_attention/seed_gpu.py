"""Seed kernel for 7p_ragged_paged_attention on NVIDIA GPUs (Pallas Triton backend).

One program per (bq-row query block, query head). Integer glue gives each block
the first and last sequence its rows belong to; the program loops over those
sequences and, for each, over the cache pages its rows can see (up to the
latest query position of the block, so causality also bounds the loop). Page
numbers come from the page table ref and the (page_size, D) k and v slices of
the query head's kv head are loaded with dynamic indexing. Scores (bq, page_size)
are masked to the sequence's own rows and to causality, followed by an online
softmax with float32 register state; rows of different sequences are disjoint,
so one accumulator serves the whole block, stored once.

Layout glue (free reshape): kv_pages (P, page, 2*KV, D) -> (P, page, 2*KV*D), so
k and v of kv head h are the slices [2h*D, (2h+1)*D) and [(2h+1)*D, (2h+2)*D).
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
MASK = -1e30


def _rpa_kernel(lens_ref, pages_ref, cu_ref, first_ref, last_ref, q_ref, kv_ref, o_ref, *,
                pps, page_size, group, head_dim, bq, scale):
    b = pl.program_id(0)
    hk = jax.lax.div(pl.program_id(1), group)
    q = q_ref[...]                                                   # (bq, D)
    shape = (bq, page_size)
    token = b * bq + jax.lax.broadcasted_iota(jnp.int32, shape, 0)

    def seq_body(s, carry):
        start = cu_ref[s]
        end = cu_ref[s + 1]
        offset = lens_ref[s] - (end - start) - start                 # absolute pos = row + offset
        row_end = jnp.minimum(end, (b + 1) * bq) - 1
        num_pages = jax.lax.div(jnp.maximum(row_end + offset, 0), page_size) + 1
        in_seq = (token >= start) & (token < end)

        def page_body(j, carry):
            m, l, acc = carry
            page = pages_ref[s * pps + j]
            k = kv_ref[page, :, pl.ds(2 * hk * head_dim, head_dim)]          # (page, D)
            v = kv_ref[page, :, pl.ds((2 * hk + 1) * head_dim, head_dim)]
            sc = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32) * scale
            kpos = j * page_size + jax.lax.broadcasted_iota(jnp.int32, shape, 1)
            mask = in_seq & (kpos <= token + offset)
            sc = jnp.where(mask, sc, MASK)
            m_new = jnp.maximum(m, jnp.max(sc, axis=1))
            alpha = jnp.exp(m - m_new)
            p = jnp.where(mask, jnp.exp(sc - m_new[:, None]), 0.0)
            l = alpha * l + jnp.sum(p, axis=1)
            acc = alpha[:, None] * acc + jnp.dot(p.astype(v.dtype), v,
                                                 preferred_element_type=jnp.float32)
            return m_new, l, acc

        return jax.lax.fori_loop(0, num_pages, page_body, carry)

    init = (jnp.full((bq,), MASK, jnp.float32), jnp.zeros((bq,), jnp.float32),
            jnp.zeros((bq, head_dim), jnp.float32))
    _, l, acc = jax.lax.fori_loop(first_ref[b], last_ref[b] + 1, seq_body, init)
    safe = jnp.where(l > 0, l, 1.0)
    o_ref[...] = jnp.where(l[:, None] > 0, acc / safe[:, None], 0.0).astype(o_ref.dtype)


def kernel(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    t, h, d = queries.shape
    total_pages, page_size, c, _ = kv_pages.shape
    kv = c // 2
    s, pps = page_indices.shape
    bq = min(32, t)
    tp = pl.cdiv(t, bq) * bq
    nb = tp // bq
    q = jnp.pad(queries, ((0, tp - t), (0, 0), (0, 0)))
    kv_flat = kv_pages.reshape(total_pages, page_size, c * d)
    cu = cu_q_lens.astype(jnp.int32)
    ns = num_seqs[0]
    ends = jnp.where(jnp.arange(s) < ns, cu[1:], cu[ns])            # inactive seqs own no rows
    rows0 = jnp.arange(nb, dtype=jnp.int32) * bq
    rows1 = jnp.minimum(rows0 + bq, cu[ns]) - 1
    first = jnp.minimum(jnp.searchsorted(ends, rows0, side="right"), s - 1).astype(jnp.int32)
    last = jnp.minimum(jnp.searchsorted(ends, rows1, side="right"), ns - 1)
    last = jnp.where(rows1 >= rows0, last, first - 1).astype(jnp.int32)  # empty block: no loop
    whole = pl.no_block_spec
    q_spec = pl.BlockSpec((bq, None, d), lambda bi, hi: (bi, hi, 0))
    out = pl.pallas_call(
        functools.partial(_rpa_kernel, pps=pps, page_size=page_size, group=h // kv,
                          head_dim=d, bq=bq, scale=1.0 / math.sqrt(d)),
        out_shape=jax.ShapeDtypeStruct((tp, h, d), queries.dtype),
        grid=(nb, h),
        in_specs=[whole, whole, whole, whole, whole, q_spec, whole],
        out_specs=q_spec,
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(kv_lens.astype(jnp.int32), page_indices.reshape(-1).astype(jnp.int32), cu, first, last,
      q, kv_flat)
    return out[:t]
