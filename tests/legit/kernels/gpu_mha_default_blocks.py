"""Legit (l3_multi_head_attention, float32, no mask): JAX's Pallas GPU (Triton) attention,
``jax.experimental.pallas.ops.gpu.attention.mha``, with its default block sizes (128 x 128,
two pipeline stages), judged for PallasBench's A100. The judge's shared-memory estimate (every
dot's operands, times the stages in a loop: 192 KiB) is over the A100's 163 KiB, what Triton
itself needs for sm_80 is not: accepted, with the warning where Triton's compiler cannot
decide. The task's (H, S, D) layout becomes the kernel's (1, S, H, D) (free glue)."""
import math

from jax.experimental.pallas.ops.gpu import attention

TARGET = "gpu"


def kernel(q, k, v):
    q, k, v = (t.transpose(1, 0, 2)[None] for t in (q, k, v))
    out = attention.mha(q, k, v, None, sm_scale=1.0 / math.sqrt(q.shape[-1]), causal=False)
    return out[0].transpose(1, 0, 2)
