"""l1_matmul (PallasBench #8): ``X @ Y``.

X (1024, 1024) float32 ~ N(0, 1); Y (1024, 1024) float32 ~ N(0, 1/1024) (so X @ Y stays
O(1)); output (1024, 1024) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, y):
    return jnp.matmul(x, y)


TASK = Task(
    "l1_matmul",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=256), "full": dict(M=1024, K=1024, N=1024)},
    inputs=lambda d: [normal("X", (d.M, d.K), dtype="float32"),
                      weight("Y", (d.K, d.N), fan_in=d.K, dtype="float32")],
    flops=lambda d: 2 * d.M * d.K * d.N,
    suite=SUITE,
    meta=meta(8, 1, "matmul"),
)
