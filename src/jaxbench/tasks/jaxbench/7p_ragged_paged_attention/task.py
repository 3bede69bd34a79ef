"""7p_ragged_paged_attention: Llama-3.1-70B mixed prefill + decode over a paged KV cache.

Inputs (call order; the layout of vLLM-TPU / JAX's ragged paged attention):
  queries       (T, H, D) bf16   all sequences' query tokens, concatenated
  kv_pages      (P, page_size, 2*KV, D) bf16   paged cache, k and v interleaved per
                                 kv head: combined head 2h is k of kv head h, 2h+1 its v
  kv_lens       (S,) int32       tokens in each sequence's cache (the new ones included)
  page_indices  (S, pps) int32   page table: token t of sequence s lives in
                                 page page_indices[s, t // page_size], slot t % page_size
  cu_q_lens     (S + 1,) int32   cumulative query lengths; sequence s owns query rows
                                 cu_q_lens[s] .. cu_q_lens[s+1]-1
  num_seqs      (1,) int32       number of active sequences; always S here

Output (T, H, D) bf16. Sequence s with q_len = cu_q_lens[s+1] - cu_q_lens[s] and
kv_len = kv_lens[s]: its query i (0 <= i < q_len) sits at absolute position
kv_len - q_len + i and attends causally to cache positions 0 .. kv_len - q_len + i
(GQA: query head h uses kv head h // (H / KV)):

    out[cu_q_lens[s] + i, h] = softmax_t(q . k_t / sqrt(D)) @ v,   t <= kv_len - q_len + i,

with float32 scores and softmax. Lengths are genuinely ragged: a random half of
the sequences decode (q_len = 1), the other half prefill chunks of random,
uneven lengths (weights 2..8, so up to 4x apart; at most QMAX = min(T, 512)
tokens each); the q lengths sum exactly to T, so
cu_q_lens[num_seqs] == T and every query row belongs to one sequence (no
padding rows). kv_len = q_len + a random context length in [0, L - q_len],
L = pps * page_size. The page table is a random permutation of all P = S * pps
pages; entries past a sequence's length point at other data and must not matter.
Full size T = 4096, S = 64, H = 64, KV = 8, D = 128, page_size = 16, pps = 256.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.spec import Task, custom, normal


def _window_reference(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs, qmax):
    t_total, h, d = queries.shape
    _, page_size, c, _ = kv_pages.shape
    kv = c // 2
    g = h // kv
    pps = page_indices.shape[1]
    length = pps * page_size
    qpad = jnp.pad(queries, ((0, qmax), (0, 0), (0, 0)))
    rows = jnp.arange(qmax)
    cols = jnp.arange(length)

    def one_seq(out, s):
        start = cu_q_lens[s]
        q_len = cu_q_lens[s + 1] - start
        kv_len = kv_lens[s]
        q = jax.lax.dynamic_slice_in_dim(qpad, start, qmax).reshape(qmax, kv, g, d)
        pages = kv_pages[page_indices[s]].reshape(length, c, d)
        k, v = pages[:, 0::2], pages[:, 1::2]
        scores = jnp.einsum("qkgd,tkd->kgqt", q, k, preferred_element_type=jnp.float32)
        scores = scores / jnp.sqrt(jnp.float32(d))
        mask = (cols[None, :] <= (kv_len - q_len + rows)[:, None]) & (cols[None, :] < kv_len)
        p = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1)
        o = jnp.einsum("kgqt,tkd->qkgd", p.astype(v.dtype), v, preferred_element_type=jnp.float32)
        keep = (rows < q_len) & (s < num_seqs[0])
        window = jax.lax.dynamic_slice_in_dim(out, start, qmax)
        window = jnp.where(keep[:, None, None], o.reshape(qmax, h, d), window)
        return jax.lax.dynamic_update_slice_in_dim(out, window, start, 0), None

    out = jnp.zeros((t_total + qmax, h, d), jnp.float32)
    out, _ = jax.lax.scan(one_seq, out, jnp.arange(page_indices.shape[0]))
    return out[:t_total].astype(queries.dtype)


def _make_reference(qmax_of):
    def reference(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
        # the longest prefill chunk is bounded by QMAX (see make_inputs), so each
        # sequence's query span fits one QMAX-row window
        qmax = qmax_of(queries.shape[0])
        return _window_reference(queries, kv_pages, kv_lens, page_indices, cu_q_lens,
                                 num_seqs, qmax)
    return reference


def _qmax(t_total):
    # small (T=128): 128; full (T=4096): 512
    return min(t_total, 512)


reference = _make_reference(_qmax)


def _q_lens(key, t_total, s):
    """Half the sequences decode (1 token), the rest share the remaining tokens unevenly."""
    k_d, k_w = jax.random.split(key)
    decode = jax.random.permutation(k_d, s) < s // 2
    rest = t_total - s // 2
    w = jnp.where(decode, 0, jax.random.randint(k_w, (s,), 2, 9)).astype(jnp.float32)
    pre = jnp.floor(rest * w / jnp.sum(w)).astype(jnp.int32)
    extra = rest - jnp.sum(pre)                     # < number of prefill sequences
    rank = jnp.cumsum(~decode) - 1
    pre = pre + ((~decode) & (rank < extra)).astype(jnp.int32)
    # weights in [2, 8]: max chunk <= rest * 8 / (8 + 2 * (n_prefill - 1)) + 1, i.e.
    # <= 72 (small) and <= 466 (full), within QMAX
    return jnp.where(decode, 1, pre).astype(jnp.int32)


def make_inputs(key, d):
    kq, kkv, kl, kc, kp = jax.random.split(key, 5)
    pages = d.S * d.PPS
    length = d.PPS * d.PAGE
    queries = normal("queries", (d.T, d.H, d.D)).draw(kq)
    kv_pages = normal("kv_pages", (pages, d.PAGE, 2 * d.KV, d.D)).draw(kkv)
    q_lens = _q_lens(kl, d.T, d.S)
    kv_lens = q_lens + jax.random.randint(kc, (d.S,), 0, length - q_lens + 1, jnp.int32)
    page_indices = jax.random.permutation(kp, pages).astype(jnp.int32).reshape(d.S, d.PPS)
    cu_q_lens = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum(q_lens)]).astype(jnp.int32)
    num_seqs = jnp.array([d.S], jnp.int32)
    return queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs


def _inputs(d):
    pages = d.S * d.PPS
    return [
        normal("queries", (d.T, d.H, d.D)),
        normal("kv_pages", (pages, d.PAGE, 2 * d.KV, d.D)),
        custom("kv_lens", (d.S,), "int32"),
        custom("page_indices", (d.S, d.PPS), "int32"),
        custom("cu_q_lens", (d.S + 1,), "int32"),
        custom("num_seqs", (1,), "int32"),
    ]


def _bytes(d):
    # q + out + the cache pages in use (expected kv_len about L/2) + tables
    length = d.PPS * d.PAGE
    return 2 * d.T * d.H * d.D * 2 + d.S * (length / 2) * 2 * d.KV * d.D * 2 + 4 * d.S * (d.PPS + 3)


TASK = Task(
    "7p_ragged_paged_attention",
    reference=reference,
    sizes={"small": dict(T=128, S=8, H=16, KV=2, D=128, PAGE=16, PPS=16),
           "full": dict(T=4096, S=64, H=64, KV=8, D=128, PAGE=16, PPS=256)},
    inputs=_inputs,
    make_inputs=make_inputs,
    # estimate: each query token attends to about L/2 cache positions on average
    flops=lambda d: 4 * d.T * d.H * d.D * (d.PPS * d.PAGE) / 2,
    bytes=_bytes,
    meta=dict(source="Llama-3.1-70B mixed prefill+decode (ragged paged attention)",
              family="attention", level="production", priority=True),
)
