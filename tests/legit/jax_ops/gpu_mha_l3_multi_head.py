"""l3_multi_head_attention (float32, no mask): ops.gpu.attention.mha (Triton) on a batch of
one; the task's (H, S, D) layout becomes the kernel's (1, S, H, D) (free glue)."""
import math

from jax.experimental.pallas.ops.gpu import attention

TARGET = "gpu"


def kernel(q, k, v):
    q, k, v = (t.transpose(1, 0, 2)[None] for t in (q, k, v))
    out = attention.mha(q, k, v, None, sm_scale=1.0 / math.sqrt(q.shape[-1]), causal=False,
                        block_sizes=attention.BlockSizes(block_q=64, block_k=64))
    return out[0].transpose(1, 0, 2)
