"""2p_gqa_attention: ops.tpu.flash_attention (plain MHA); each kv head is repeated for its
group of query heads (a broadcast, free glue)."""
import math

import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import flash_attention as fa

TARGET = "tpu"


def kernel(q, k, v):
    group = q.shape[1] // k.shape[1]
    k, v = (jnp.repeat(t, group, axis=1) for t in (k, v))
    sizes = fa.BlockSizes(block_q=128, block_k_major=128, block_k=128, block_b=1)
    return fa.flash_attention(q, k, v, causal=True, sm_scale=1.0 / math.sqrt(q.shape[-1]),
                              block_sizes=sizes)
