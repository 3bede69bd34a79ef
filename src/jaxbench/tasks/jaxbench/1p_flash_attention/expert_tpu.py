"""Expert kernel for 1p_flash_attention on TPU: JAX's Pallas TPU flash-attention kernel.

Wraps ``jax.experimental.pallas.ops.tpu.flash_attention.flash_attention`` with
``causal=True``, ``sm_scale = 1/sqrt(D)`` and forward blocks of 512 along the
sequence (S/2 for short sequences, so that the causal block skipping still shows
at the small check size); the library kernel skips KV blocks above the diagonal.
"""

import math

from jax.experimental.pallas.ops.tpu import flash_attention as fa

TARGET = "tpu"


def kernel(q, k, v):
    _, _, s, d = q.shape
    blk = min(512, max(128, s // 2))
    sizes = fa.BlockSizes(block_q=blk, block_k_major=blk, block_k=blk, block_b=1)
    return fa.flash_attention(q, k, v, causal=True, sm_scale=1.0 / math.sqrt(d),
                              block_sizes=sizes)
