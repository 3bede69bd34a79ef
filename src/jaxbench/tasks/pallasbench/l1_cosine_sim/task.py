"""l1_cosine_sim (PallasBench #24): cosine similarity of matching rows.

``out[i] = <x_i, z_i> / (||x_i|| * ||z_i|| + 1e-8)``.
x, z (2048, 1024) float32, each ~ N(0, 1); output (2048,) float32.

The rows are independent draws, so the similarities are small (std ~ 1/sqrt(1024) ~
0.03, largest ~ 0.1 over a few thousand rows).
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal

EPS = 1e-8


def reference(x, z):
    dot = jnp.sum(x * z, axis=-1)
    norms = jnp.sqrt(jnp.sum(x * x, axis=-1)) * jnp.sqrt(jnp.sum(z * z, axis=-1))
    return dot / (norms + EPS)


TASK = Task(
    "l1_cosine_sim",
    reference=reference,
    sizes={"small": dict(M=128, N=1024), "full": dict(M=2048, N=1024)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32"),
                      normal("z", (d.M, d.N), dtype="float32")],
    # three multiply-and-sum reductions (x.z, x.x, z.z): 6 flops per element
    flops=lambda d: 6 * d.M * d.N,
    suite=SUITE,
    # cosines of independent rows are ~0.03: atol 1e-2 would accept a 30 % error
    atol=1e-4,
    meta=meta(24, 1, "reduction"),
)
