"""l1_reduce_mean (PallasBench #13): row mean, ``out[i] = mean_j x[i, j]``.

x (4096, 2048) float32 ~ N(0, 1); output (4096,) float32 (one value per row).
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jnp.mean(x, axis=-1)


TASK = Task(
    "l1_reduce_mean",
    reference=reference,
    sizes={"small": dict(M=256, N=1024), "full": dict(M=4096, N=2048)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # one add per element (plus one divide per row)
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    # row means are ~0.02: atol 1e-2 would accept a 50 % error
    atol=1e-3,
    meta=meta(13, 1, "reduction"),
)
