"""Seed kernel for 7p_ragged_paged_attention on TPU: flash attention over a work list.

Query rows are cut into bq-row blocks. Sequences are ragged, so a block can hold
the rows of several sequences (and a prefill chunk can span several blocks):
integer glue builds a work list of (sequence, q block) items in row order, at
most T/bq + S of them, padded with inert copies of the last item, plus the last
cache page each item needs (causality: the item's latest query position). The
work list, page table, kv lengths and cu_q_lens are scalar-prefetched.

Grid (item, kv block). A kv block is NP pages: NP page operands whose index
maps read the page table, so the pipeline gathers the scattered pages; page
numbers past the item's last page are clamped (no new DMA) and their compute is
skipped. Per step and kv head: scores for all G*bq (query head, row) pairs of the
block, masked to the item's own rows and to causality, then an online-softmax
update of float32 running max / sum / accumulator in VMEM. The accumulators
live across the consecutive items of one q block (rows of different sequences
are disjoint) and the block is written out after its last item.

Layout glue: queries (T, H, D) -> (KV, G, T, D) so a kv head's queries form one
(G*bq, D) tile; kv_pages (P, page, 2*KV, D) -> (P, page, 2*KV*D) (free), so k and
v of kv head h are the lane-aligned slices [2h*D, (2h+1)*D) and [(2h+1)*D, (2h+2)*D).
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
MASK = -1e30


def _work_list(kv_lens, cu_q_lens, num_seqs, bq, page_size, num_items):
    s = kv_lens.shape[0]
    starts, ends = cu_q_lens[:-1], cu_q_lens[1:]
    q_lens = ends - starts
    active = (jnp.arange(s) < num_seqs[0]) & (q_lens > 0)
    b0 = starts // bq
    b1 = (jnp.maximum(ends, 1) - 1) // bq
    counts = jnp.where(active, b1 - b0 + 1, 0)
    cum = jnp.cumsum(counts)
    total = cum[-1]
    w = jnp.arange(num_items, dtype=jnp.int32)
    w_eff = jnp.maximum(jnp.minimum(w, total - 1), 0)
    seq = jnp.minimum(jnp.searchsorted(cum, w_eff, side="right"), s - 1).astype(jnp.int32)
    blk = (b0[seq] + w_eff - (cum[seq] - counts[seq])).astype(jnp.int32)
    row_end = jnp.minimum(ends[seq], (blk + 1) * bq) - 1          # last row of the item
    max_pos = kv_lens[seq] - q_lens[seq] + (row_end - starts[seq])
    last_page = (jnp.maximum(max_pos, 0) // page_size).astype(jnp.int32)
    valid = (w < total).astype(jnp.int32)
    change = blk[1:] != blk[:-1]
    first = jnp.concatenate([jnp.ones((1,), bool), change]).astype(jnp.int32)
    last = jnp.concatenate([change, jnp.ones((1,), bool)]).astype(jnp.int32)
    return seq, blk, valid, first, last, last_page


def _rpa_kernel(lens_ref, pages_ref, cu_ref, seq_ref, blk_ref, valid_ref, first_ref, last_ref,
                lastpage_ref, q_ref, *refs, num_pages, page_size, kv_heads, head_dim, bq,
                scale):
    kv_refs = refs[:num_pages]
    o_ref, m_ref, l_ref, acc_ref = refs[num_pages:]
    w = pl.program_id(0)
    j = pl.program_id(1)
    block = num_pages * page_size

    @pl.when(jnp.logical_and(first_ref[w] == 1, j == 0))
    def _init():
        m_ref[...] = jnp.full_like(m_ref, MASK)
        l_ref[...] = jnp.zeros_like(l_ref)
        acc_ref[...] = jnp.zeros_like(acc_ref)

    @pl.when(jnp.logical_and(valid_ref[w] == 1, j * num_pages <= lastpage_ref[w]))
    def _compute():
        s = seq_ref[w]
        start = cu_ref[s]
        end = cu_ref[s + 1]
        offset = lens_ref[s] - (end - start) - start     # absolute position = row + offset
        rows = q_ref.shape[1] * q_ref.shape[2]
        shape = (rows, block)
        token = blk_ref[w] * bq + jax.lax.rem(jax.lax.broadcasted_iota(jnp.int32, shape, 0), bq)
        kpos = j * block + jax.lax.broadcasted_iota(jnp.int32, shape, 1)
        mask = (token >= start) & (token < end) & (kpos <= token + offset)
        kv_all = jnp.concatenate([r[...] for r in kv_refs], axis=0)  # (block, 2*KV*D)
        for h in range(kv_heads):
            q = q_ref[h].reshape(rows, head_dim)
            k = kv_all[:, 2 * h * head_dim:(2 * h + 1) * head_dim]
            v = kv_all[:, (2 * h + 1) * head_dim:(2 * h + 2) * head_dim]
            sc = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32) * scale
            sc = jnp.where(mask, sc, MASK)
            m_prev = m_ref[h]                                        # (rows, 128) lane-broadcast
            m_new = jnp.maximum(m_prev, jnp.max(sc, axis=1, keepdims=True))
            alpha = jnp.exp(m_prev - m_new)
            p = jnp.where(mask, jnp.exp(sc - m_new[:, :1]), 0.0)
            l_ref[h] = alpha * l_ref[h] + jnp.sum(p, axis=1, keepdims=True)
            m_ref[h] = m_new
            acc_ref[h] = alpha[:, :1] * acc_ref[h] + jnp.dot(
                p.astype(v.dtype), v, preferred_element_type=jnp.float32)

    @pl.when(jnp.logical_and(last_ref[w] == 1, j == pl.num_programs(1) - 1))
    def _store():
        for h in range(kv_heads):
            l = l_ref[h][:, :1]
            out = jnp.where(l > 0, acc_ref[h] / jnp.where(l > 0, l, 1.0), 0.0)
            o_ref[h] = out.reshape(o_ref.shape[1:]).astype(o_ref.dtype)


def kernel(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    t, h, d = queries.shape
    total_pages, page_size, c, _ = kv_pages.shape
    kv = c // 2
    g = h // kv
    s, pps = page_indices.shape
    bq = min(64, t)
    tp = pl.cdiv(t, bq) * bq
    num_pages = math.gcd(pps, 8)
    num_items = tp // bq + s
    q = jnp.pad(queries, ((0, tp - t), (0, 0), (0, 0)))
    q = q.reshape(tp, kv, g, d).transpose(1, 2, 0, 3)               # (KV, G, Tp, D)
    kv_flat = kv_pages.reshape(total_pages, page_size, c * d)
    kv_lens = kv_lens.astype(jnp.int32)
    cu = cu_q_lens.astype(jnp.int32)
    prefetch = (kv_lens, page_indices.reshape(-1).astype(jnp.int32), cu,
                *_work_list(kv_lens, cu, num_seqs, bq, page_size, num_items))

    def page_spec(i):
        def index_map(w, j, lens, pages, cu_, seq, blk, valid, first, last, lastpage):
            return (pages[seq[w] * pps + jnp.minimum(j * num_pages + i, lastpage[w])], 0, 0)
        return pl.BlockSpec((None, page_size, c * d), index_map)

    q_spec = pl.BlockSpec((kv, g, bq, d), lambda w, j, lens, pages, cu_, seq, blk, *_:
                          (0, 0, blk[w], 0))
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=len(prefetch),
        grid=(num_items, pps // num_pages),
        in_specs=[q_spec] + [page_spec(i) for i in range(num_pages)],
        out_specs=q_spec,
        scratch_shapes=[pltpu.VMEM((kv, g * bq, 128), jnp.float32),
                        pltpu.VMEM((kv, g * bq, 128), jnp.float32),
                        pltpu.VMEM((kv, g * bq, d), jnp.float32)],
    )
    out = pl.pallas_call(
        functools.partial(_rpa_kernel, num_pages=num_pages, page_size=page_size, kv_heads=kv,
                          head_dim=d, bq=bq, scale=1.0 / math.sqrt(d)),
        out_shape=jax.ShapeDtypeStruct((kv, g, tp, d), queries.dtype),
        grid_spec=grid_spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary", "arbitrary")),
    )(*prefetch, q, *([kv_flat] * num_pages))
    return out.transpose(2, 0, 1, 3).reshape(tp, h, d)[:t]
