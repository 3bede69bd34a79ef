"""l1_reduce_max (PallasBench #12): row max, ``out[i] = max_j x[i, j]``.

x (4096, 2048) float32 ~ N(0, 1); output (4096,) float32 (one value per row).
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jnp.max(x, axis=-1)


TASK = Task(
    "l1_reduce_max",
    reference=reference,
    sizes={"small": dict(M=256, N=1024), "full": dict(M=4096, N=2048)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # one comparison per element
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    meta=meta(12, 1, "reduction"),
)
