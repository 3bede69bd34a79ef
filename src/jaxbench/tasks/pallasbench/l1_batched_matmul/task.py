"""l1_batched_matmul (PallasBench #9): ``X_b @ Y_b`` for each batch index b.

X (8, 256, 256) float32 ~ N(0, 1); Y (8, 256, 256) float32 ~ N(0, 1/256) (so each product
stays O(1)); output (8, 256, 256) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, y):
    return jnp.matmul(x, y)


TASK = Task(
    "l1_batched_matmul",
    reference=reference,
    sizes={"small": dict(B=4, M=128, K=128, N=128), "full": dict(B=8, M=256, K=256, N=256)},
    inputs=lambda d: [normal("X", (d.B, d.M, d.K), dtype="float32"),
                      weight("Y", (d.B, d.K, d.N), fan_in=d.K, dtype="float32")],
    flops=lambda d: 2 * d.B * d.M * d.K * d.N,
    suite=SUITE,
    meta=meta(9, 1, "matmul"),
)
