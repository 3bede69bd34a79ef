"""Expert kernel for 7p_ragged_paged_attention on TPU: JAX's ragged paged attention.

``jax.experimental.pallas.ops.tpu.ragged_paged_attention.ragged_paged_attention``
(the vLLM-TPU kernel for mixed prefill + decode batches). The task uses the
library's own layout (interleaved k/v heads, page table, cu_q_lens, num_seqs),
so there is no glue: only the softmax scale 1/sqrt(D) is passed. Block sizes
are explicit (the library's tuned-table lookup asks the runtime for the TPU
generation, which fails when lowering from a CPU host): 16 pages (256 tokens)
per kv block and 32 queries per q block, the TPU v6 table's entry for the
nearest configuration (32 q heads / 8 kv heads per block, page 16, 4096 tokens).
"""

import math

from jax.experimental.pallas.ops.tpu.ragged_paged_attention import ragged_paged_attention

TARGET = "tpu"


def kernel(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    t, _, d = queries.shape
    pps = page_indices.shape[1]
    return ragged_paged_attention(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                                  sm_scale=1.0 / math.sqrt(d),
                                  num_kv_pages_per_block=min(16, pps),
                                  num_queries_per_block=min(32, t))
