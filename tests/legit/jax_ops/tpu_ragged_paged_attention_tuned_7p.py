"""7p_ragged_paged_attention: ops.tpu.ragged_paged_attention left to choose its own block sizes
(its tuned table, keyed by the TPU generation it reads from jax.devices()[0].device_kind)."""
import math

from jax.experimental.pallas.ops.tpu.ragged_paged_attention import ragged_paged_attention

TARGET = "tpu"


def kernel(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    return ragged_paged_attention(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                                  sm_scale=1.0 / math.sqrt(queries.shape[-1]))
