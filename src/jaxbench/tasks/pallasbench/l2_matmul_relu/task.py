"""l2_matmul_relu (PallasBench #28): ``max(X @ W, 0)``.

X (1024, 1024) float32 ~ N(0, 1); W (1024, 1024) float32 ~ N(0, 1/1024) (so X @ W stays
O(1)); output (1024, 1024) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w):
    return jnp.maximum(jnp.matmul(x, w), 0)


TASK = Task(
    "l2_matmul_relu",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=256), "full": dict(M=1024, K=1024, N=1024)},
    inputs=lambda d: [normal("X", (d.M, d.K), dtype="float32"),
                      weight("W", (d.K, d.N), fan_in=d.K, dtype="float32")],
    flops=lambda d: 2 * d.M * d.K * d.N + d.M * d.N,
    suite=SUITE,
    meta=meta(28, 2, "matmul_epilogue"),
)
