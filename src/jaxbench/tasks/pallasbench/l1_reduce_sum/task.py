"""l1_reduce_sum (PallasBench #11): row sum, ``out[i] = sum_j x[i, j]``.

x (4096, 2048) float32 ~ N(0, 1); output (4096,) float32 (one value per row).
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jnp.sum(x, axis=-1)


TASK = Task(
    "l1_reduce_sum",
    reference=reference,
    sizes={"small": dict(M=256, N=1024), "full": dict(M=4096, N=2048)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # one add per element
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    meta=meta(11, 1, "reduction"),
)
