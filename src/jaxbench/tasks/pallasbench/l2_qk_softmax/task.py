"""l2_qk_softmax (PallasBench #36): ``softmax(Q @ K^T / sqrt(d))`` over the last axis.

Q, K (256, 64) float32 ~ N(0, 1) (d = 64, scale 1/8: scores ~ N(0, 1)); output the
(256, 256) float32 attention-probability matrix, each row summing to 1.
"""

import math

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(q, k):
    s = jnp.matmul(q, k.T) / math.sqrt(q.shape[-1])
    return jax.nn.softmax(s, axis=-1)


TASK = Task(
    "l2_qk_softmax",
    reference=reference,
    sizes={"small": dict(N=128, D=64), "full": dict(N=256, D=64)},
    inputs=lambda d: [normal("Q", (d.N, d.D), dtype="float32"),
                      normal("K", (d.N, d.D), dtype="float32")],
    # Q K^T, then scale, max, subtract, exp, sum, divide: ~6 flops per score
    flops=lambda d: 2 * d.N * d.N * d.D + 6 * d.N * d.N,
    suite=SUITE,
    # probabilities of ~1/256: under atol 1e-2 an all-zero output would pass
    atol=1e-6,
    meta=meta(36, 2, "attention"),
)
