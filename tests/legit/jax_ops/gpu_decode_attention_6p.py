"""6p_paged_attention: ops.gpu.decode_attention.gqa (Triton split-k decode). Each sequence's
pages are gathered into a contiguous cache (a gather, free glue) and kv_lens bounds it."""
from jax.experimental.pallas.ops.gpu import decode_attention

TARGET = "gpu"


def kernel(queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    del cu_q_lens  # one query per sequence
    s, pps = page_indices.shape
    _, page, kv, d = k_pages.shape
    k, v = (t[page_indices].reshape(s, pps * page, kv, d) for t in (k_pages, v_pages))
    out = decode_attention.gqa(queries, k, v, kv_seq_len=kv_lens, block_h=16, block_k=64,
                               k_splits=4)
    return out.astype(queries.dtype)  # the op returns float32
