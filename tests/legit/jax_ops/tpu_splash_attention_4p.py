"""4p_sparse_attention: ops.tpu.splash_attention with a causal mask (fully masked blocks are
skipped); GQA by repeating each kv head for its query heads (free glue). Splash takes one
sequence (heads, S, D) and scales nothing, so the batch is mapped and q is pre-scaled."""
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_kernel as sk
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as sm

TARGET = "tpu"


def kernel(q, k, v):
    _, h, s, d = q.shape
    group = h // k.shape[1]
    k, v = (jnp.repeat(t, group, axis=1) for t in (k, v))
    mask = sm.MultiHeadMask([sm.CausalMask((s, s)) for _ in range(h)])
    sizes = sk.BlockSizes(block_q=128, block_kv=128, block_kv_compute=128)
    attend = sk.make_splash_mha(mask, head_shards=1, q_seq_shards=1, block_sizes=sizes)
    q = q * np.asarray(1.0 / math.sqrt(d), q.dtype)
    return jax.vmap(attend)(q, k, v)
