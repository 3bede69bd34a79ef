"""l2_linear_bias_relu (PallasBench #31): ``max(X @ W + b, 0)``.

X (1024, 1024) float32 ~ N(0, 1); W (1024, 2048) float32 ~ N(0, 1/1024) (so X @ W stays
O(1)); b (2048,) float32 ~ N(0, 1), broadcast over rows; output (1024, 2048) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    return jnp.maximum(jnp.matmul(x, w) + b, 0)


TASK = Task(
    "l2_linear_bias_relu",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=1024, K=1024, N=2048)},
    inputs=lambda d: [normal("X", (d.M, d.K), dtype="float32"),
                      weight("W", (d.K, d.N), fan_in=d.K, dtype="float32"),
                      normal("b", (d.N,), dtype="float32")],
    flops=lambda d: 2 * d.M * d.K * d.N + 2 * d.M * d.N,
    suite=SUITE,
    meta=meta(31, 2, "matmul_epilogue"),
)
