"""7p_ragged_paged_attention: ops.tpu.ragged_paged_attention, the task's own layout, with
explicit block sizes (no tuned-table look-up)."""
import math

from jax.experimental.pallas.ops.tpu.ragged_paged_attention import ragged_paged_attention

TARGET = "tpu"


def kernel(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    return ragged_paged_attention(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                                  sm_scale=1.0 / math.sqrt(queries.shape[-1]),
                                  num_kv_pages_per_block=8, num_queries_per_block=32,
                                  vmem_limit_bytes=32 * 1024 * 1024)
