"""l3_multi_head_attention (PallasBench #42): multi-head attention, no mask.

For each head h: ``out[h] = softmax(Q[h] K[h]ᵀ / sqrt(d)) V[h]``, softmax over keys.

Q, K, V (H, S, d) = (8, 256, 64) float32, each ~ N(0, 1); output (H, S, d) float32.
"""

import math

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(q, k, v):
    s = jnp.einsum("hqd,hkd->hqk", q, k) / math.sqrt(q.shape[-1])
    return jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(s, axis=-1), v)


TASK = Task(
    "l3_multi_head_attention",
    reference=reference,
    sizes={"small": dict(H=4, S=256, D=64), "full": dict(H=8, S=256, D=64)},
    inputs=lambda d: [normal("Q", (d.H, d.S, d.D), dtype="float32"),
                      normal("K", (d.H, d.S, d.D), dtype="float32"),
                      normal("V", (d.H, d.S, d.D), dtype="float32")],
    # per head: Q Kᵀ and P V (2 S² d each) plus ~5 S² for the softmax
    flops=lambda d: d.H * (4 * d.S * d.S * d.D + 5 * d.S * d.S),
    suite=SUITE,
    meta=meta(42, 3, "attention"),
)
