"""l2_matmul_gelu (PallasBench #29): ``gelu_tanh(X @ W)``.

``gelu_tanh(y) = 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3)))`` (the tanh approximation).
X (1024, 1024) float32 ~ N(0, 1); W (1024, 1024) float32 ~ N(0, 1/1024) (so X @ W stays
O(1)); output (1024, 1024) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w):
    return jax.nn.gelu(jnp.matmul(x, w), approximate=True)


TASK = Task(
    "l2_matmul_gelu",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=256), "full": dict(M=1024, K=1024, N=1024)},
    inputs=lambda d: [normal("X", (d.M, d.K), dtype="float32"),
                      weight("W", (d.K, d.N), fan_in=d.K, dtype="float32")],
    # the matmul, then ~8 flops per element for the tanh-GELU polynomial and blend
    flops=lambda d: 2 * d.M * d.K * d.N + 8 * d.M * d.N,
    suite=SUITE,
    meta=meta(29, 2, "matmul_epilogue"),
)
