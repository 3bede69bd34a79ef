"""l3_flash_attention (PallasBench #41): single-head attention, no mask.

``out = softmax(Q Kᵀ / sqrt(d)) V`` with the softmax over the key axis.

Q, K, V (S, d) = (512, 64) float32, each ~ N(0, 1); output (S, d) float32.

Repair: the published kernel was called flash attention but was not one (it loaded the
whole of K and V and ran a plain softmax). The math is unchanged, so there is no
unrepaired reference; the TPU seed keeps that original (whole-K/V) form, while the GPU
seed is a real flash-attention kernel (online softmax over K/V blocks).
"""

import math

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(q, k, v):
    s = jnp.dot(q, k.T) / math.sqrt(q.shape[-1])
    return jnp.dot(jax.nn.softmax(s, axis=-1), v)


TASK = Task(
    "l3_flash_attention",
    reference=reference,
    sizes={"small": dict(S=256, D=64), "full": dict(S=512, D=64)},
    inputs=lambda d: [normal("Q", (d.S, d.D), dtype="float32"),
                      normal("K", (d.S, d.D), dtype="float32"),
                      normal("V", (d.S, d.D), dtype="float32")],
    # Q Kᵀ and P V: 2 S² d each; softmax (scale, max, exp, sum, divide) ~5 S²
    flops=lambda d: 4 * d.S * d.S * d.D + 5 * d.S * d.S,
    suite=SUITE,
    meta=meta(41, 3, "attention",
              repair="the published 'flash' kernel loaded whole K/V and ran a plain softmax; "
                     "the GPU seed is now real flash attention (online softmax over K/V "
                     "blocks), the math is unchanged"),
)
