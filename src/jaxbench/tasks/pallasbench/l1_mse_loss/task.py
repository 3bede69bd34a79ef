"""l1_mse_loss (PallasBench #23): mean squared error per row.

``loss[i] = mean_j (p[i, j] - t[i, j])^2``.
p, t (2048, 1024) float32, each ~ N(0, 1); output (2048,) float32 (about 2).
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(p, t):
    return jnp.mean((p - t) ** 2, axis=-1)


TASK = Task(
    "l1_mse_loss",
    reference=reference,
    sizes={"small": dict(M=128, N=1024), "full": dict(M=2048, N=1024)},
    inputs=lambda d: [normal("p", (d.M, d.N), dtype="float32"),
                      normal("t", (d.M, d.N), dtype="float32")],
    # subtract, square, sum: 3 flops per element
    flops=lambda d: 3 * d.M * d.N,
    suite=SUITE,
    meta=meta(23, 1, "loss"),
)
