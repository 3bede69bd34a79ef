"""Expert kernel for 6p_paged_attention on TPU: JAX's own paged attention.

``jax.experimental.pallas.ops.tpu.paged_attention.paged_attention`` (the
decode kernel of JetStream / vLLM-TPU v0). Glue: the library wants the caches
head-major, (KV, P, page_size, D), so the task's (P, page_size, KV, D) caches are
transposed first (a full copy of both caches on every call, which a serving
stack would avoid by storing them head-major), and it applies no softmax scale,
so the queries are pre-scaled by 1/sqrt(D). cu_q_lens is arange(S + 1) for
decode and is not needed. 8 pages (128 tokens) per compute block.
"""

import math

import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu.paged_attention import paged_attention

TARGET = "tpu"


def kernel(queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    del cu_q_lens
    d = queries.shape[-1]
    pps = page_indices.shape[1]
    q = (queries.astype(jnp.float32) * (1.0 / math.sqrt(d))).astype(queries.dtype)
    k = jnp.transpose(k_pages, (2, 0, 1, 3))
    v = jnp.transpose(v_pages, (2, 0, 1, 3))
    return paged_attention(q, k, v, kv_lens.astype(jnp.int32), page_indices.astype(jnp.int32),
                           pages_per_compute_block=math.gcd(pps, 8))
