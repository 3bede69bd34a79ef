"""l1_outer_product (PallasBench #10): ``out[i, j] = x[i] * y[j]``.

x (1024,) float32 ~ N(0, 1); y (1024,) float32 ~ N(0, 1); output (1024, 1024) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x, y):
    return jnp.outer(x, y)


TASK = Task(
    "l1_outer_product",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=1024, N=1024)},
    inputs=lambda d: [normal("x", (d.M,), dtype="float32"),
                      normal("y", (d.N,), dtype="float32")],
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    meta=meta(10, 1, "elementwise"),
)
