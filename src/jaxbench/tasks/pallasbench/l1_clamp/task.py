"""l1_clamp (PallasBench #21): ``clip(x, -1, 1)`` elementwise.

``y = min(max(x, -1), 1)``.
x (4096, 4096) float32 ~ N(0, 1) (about a third of it is clipped); output (4096, 4096) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jnp.clip(x, -1.0, 1.0)


TASK = Task(
    "l1_clamp",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # max and min
    flops=lambda d: 2 * d.M * d.N,
    suite=SUITE,
    meta=meta(21, 1, "elementwise"),
)
