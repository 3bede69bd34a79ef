"""Surely over an A100's shared memory (l3_multi_head_attention, float32): JAX's GPU attention
with eight pipeline stages. Its key and value blocks (128, 64) float32, 32 KiB each, are loaded
inside the loop over key blocks, so Triton's pipeliner keeps 7 copies of each: at least 224
KiB whatever layout Triton chooses, over the A100's 163 KiB (Triton 3.8 itself allocates
more for sm_80). Refused with or without Triton's compiler."""
import math

from jax.experimental.pallas.ops.gpu import attention

TARGET = "gpu"


def kernel(q, k, v):
    q, k, v = (t.transpose(1, 0, 2)[None] for t in (q, k, v))
    out = attention.mha(q, k, v, None, sm_scale=1.0 / math.sqrt(q.shape[-1]), causal=False,
                        num_stages=8)
    return out[0].transpose(1, 0, 2)
