"""l1_rmsnorm (PallasBench #7): RMSNorm over each row, no weight.

``y = x * rsqrt(mean(x^2) + 1e-5)`` with the mean over the last axis.
x (2048, 1024) float32 ~ N(0, 1); output (2048, 1024) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal

EPS = 1e-5


def reference(x):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS)


TASK = Task(
    "l1_rmsnorm",
    reference=reference,
    sizes={"small": dict(M=128, N=1024), "full": dict(M=2048, N=1024)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # square, sum, scale: ~3 flops per element
    flops=lambda d: 3 * d.M * d.N,
    suite=SUITE,
    meta=meta(7, 1, "norm"),
)
