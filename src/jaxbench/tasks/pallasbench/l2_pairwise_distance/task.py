"""l2_pairwise_distance (PallasBench #40): all-pairs Euclidean distance matrix.

``D[i, j] = sqrt(sum_d (x[i, d] - x[j, d])^2 + 1e-8)`` (the 1e-8 keeps the diagonal's
gradient finite; the diagonal is 1e-4). x (256, 32) float32 ~ N(0, 1); output (256, 256)
float32 (distances ~ 8). Note: the expansion |x_i|^2 + |x_j|^2 - 2 x_i . x_j cancels
catastrophically near the diagonal (and TF32 matmuls on GPUs make it worse); kernels
should form the differences.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal

EPS = 1e-8


def reference(x):
    diff = x[:, None, :] - x[None, :, :]
    return jnp.sqrt(jnp.sum(diff * diff, axis=-1) + EPS)


TASK = Task(
    "l2_pairwise_distance",
    reference=reference,
    sizes={"small": dict(N=128, D=32), "full": dict(N=256, D=32)},
    inputs=lambda d: [normal("x", (d.N, d.D), dtype="float32")],
    # subtract, square, add per pair and feature; add eps and sqrt per pair
    flops=lambda d: 3 * d.N * d.N * d.D + 2 * d.N * d.N,
    suite=SUITE,
    meta=meta(40, 2, "distance"),
)
