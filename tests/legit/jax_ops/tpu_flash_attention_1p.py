"""1p_flash_attention: jax.experimental.pallas.ops.tpu.flash_attention, causal, 128 blocks."""
import math

from jax.experimental.pallas.ops.tpu import flash_attention as fa

TARGET = "tpu"


def kernel(q, k, v):
    sizes = fa.BlockSizes(block_q=128, block_k_major=128, block_k=128, block_b=1)
    return fa.flash_attention(q, k, v, causal=True, sm_scale=1.0 / math.sqrt(q.shape[-1]),
                              block_sizes=sizes)
