"""6p_paged_attention: Llama-3.1-70B decode attention over a paged KV cache (GQA).

Inputs (call order):
  queries       (S, H, D) bf16   one decode token per sequence
  k_pages       (P, page_size, KV, D) bf16   the paged key cache
  v_pages       (P, page_size, KV, D) bf16   the paged value cache
  kv_lens       (S,) int32       tokens in each sequence's cache, 1 <= kv_lens[s] <= pps*page_size
  page_indices  (S, pps) int32   page table: token t of sequence s lives in
                                 page page_indices[s, t // page_size], slot t % page_size
  cu_q_lens     (S + 1,) int32   cumulative query lengths; with one query token per
                                 sequence it is always arange(S + 1) (kept for the
                                 vLLM-style interface; the query of sequence s is
                                 queries[cu_q_lens[s]], i.e. queries[s])

Output (S, H, D) bf16: for query head h of sequence s, with kv head h // (H / KV),

    out[s, h] = softmax_t(q[s, h] . k[s, t, kv] / sqrt(D)) @ v[s, ., kv],  t < kv_lens[s],

computed with float32 scores and softmax. The kv lengths are random in
[1, pps*page_size] (ragged) and the page table is a random permutation of all P
pages, so a sequence's pages are scattered; table entries past a sequence's
length point at real pages holding other data, which must not affect the output.
Full size S = 64, H = 64, KV = 8, D = 128, page_size = 16, pps = 256, P = S*pps.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.spec import Task, custom, normal


def reference(queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    s, h, d = queries.shape
    _, page_size, kv, _ = k_pages.shape
    pps = page_indices.shape[1]
    q = queries[cu_q_lens[:-1]].reshape(s, kv, h // kv, d)
    k = k_pages[page_indices].reshape(s, pps * page_size, kv, d)
    v = v_pages[page_indices].reshape(s, pps * page_size, kv, d)
    scores = jnp.einsum("skgd,stkd->skgt", q, k, preferred_element_type=jnp.float32)
    scores = scores / jnp.sqrt(jnp.float32(d))
    valid = jnp.arange(pps * page_size)[None, :] < kv_lens[:, None]
    scores = jnp.where(valid[:, None, None, :], scores, -jnp.inf)
    p = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("skgt,stkd->skgd", p.astype(v.dtype), v, preferred_element_type=jnp.float32)
    return out.reshape(s, h, d).astype(queries.dtype)


def make_inputs(key, d):
    kq, kk, kv, kl, kp = jax.random.split(key, 5)
    pages = d.S * d.PPS
    queries = normal("queries", (d.S, d.H, d.D)).draw(kq)
    k_pages = normal("k_pages", (pages, d.PAGE, d.KV, d.D)).draw(kk)
    v_pages = normal("v_pages", (pages, d.PAGE, d.KV, d.D)).draw(kv)
    kv_lens = jax.random.randint(kl, (d.S,), 1, d.PPS * d.PAGE + 1, jnp.int32)
    page_indices = jax.random.permutation(kp, pages).astype(jnp.int32).reshape(d.S, d.PPS)
    cu_q_lens = jnp.arange(d.S + 1, dtype=jnp.int32)
    return queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens


def _inputs(d):
    pages = d.S * d.PPS
    return [
        normal("queries", (d.S, d.H, d.D)),
        normal("k_pages", (pages, d.PAGE, d.KV, d.D)),
        normal("v_pages", (pages, d.PAGE, d.KV, d.D)),
        custom("kv_lens", (d.S,), "int32"),
        custom("page_indices", (d.S, d.PPS), "int32"),
        custom("cu_q_lens", (d.S + 1,), "int32"),
    ]


def _bytes(d):
    # q + out + the KV pages a sequence actually uses (expected length (L+1)/2) + tables.
    length = d.PPS * d.PAGE
    kv_bytes = 2 * d.S * (length + 1) / 2 * d.KV * d.D * 2
    return 2 * d.S * d.H * d.D * 2 + kv_bytes + 4 * (d.S * d.PPS + 2 * d.S + 1)


TASK = Task(
    "6p_paged_attention",
    reference=reference,
    sizes={"small": dict(S=4, H=16, KV=2, D=128, PAGE=16, PPS=16),
           "full": dict(S=64, H=64, KV=8, D=128, PAGE=16, PPS=256)},
    inputs=_inputs,
    make_inputs=make_inputs,
    # expected FLOPs: 4*H*D per (query head, attended token), E[kv_len] = (L + 1) / 2
    flops=lambda d: 4 * d.S * d.H * d.D * (d.PPS * d.PAGE + 1) / 2,
    bytes=_bytes,
    meta=dict(source="Llama-3.1-70B decode (paged attention)", family="attention",
              level="production", priority=True),
)
