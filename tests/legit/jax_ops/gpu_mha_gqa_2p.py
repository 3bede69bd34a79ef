"""2p_gqa_attention: ops.gpu.attention.mha (Triton), causal; kv heads repeated for their
query-head groups and (B, H, S, D) transposed to (B, S, H, D) and back (free glue)."""
import math

import jax.numpy as jnp
from jax.experimental.pallas.ops.gpu import attention

TARGET = "gpu"


def kernel(q, k, v):
    group = q.shape[1] // k.shape[1]
    k, v = (jnp.repeat(t, group, axis=1) for t in (k, v))
    q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    out = attention.mha(q, k, v, None, sm_scale=1.0 / math.sqrt(q.shape[-1]), causal=True,
                        block_sizes=attention.BlockSizes(block_q=64, block_k=64))
    return out.transpose(0, 2, 1, 3)
