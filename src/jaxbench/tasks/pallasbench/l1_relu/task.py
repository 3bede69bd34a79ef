"""l1_relu (PallasBench #1): ``max(x, 0)`` elementwise.

x (4096, 4096) float32 ~ N(0, 1); output (4096, 4096) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jnp.maximum(x, 0)


TASK = Task(
    "l1_relu",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    meta=meta(1, 1, "elementwise"),
)
