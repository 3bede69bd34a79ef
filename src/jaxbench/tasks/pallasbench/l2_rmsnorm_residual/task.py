"""l2_rmsnorm_residual (PallasBench #32): ``rmsnorm(x) + r``.

``rmsnorm(x) = x * rsqrt(mean(x^2, axis=-1) + 1e-5)`` per row, no weight.
x, r (2048, 1024) float32 ~ N(0, 1); output (2048, 1024) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal

EPS = 1e-5


def reference(x, r):
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + EPS) + r


TASK = Task(
    "l2_rmsnorm_residual",
    reference=reference,
    sizes={"small": dict(M=256, H=1024), "full": dict(M=2048, H=1024)},
    inputs=lambda d: [normal("x", (d.M, d.H), dtype="float32"),
                      normal("r", (d.M, d.H), dtype="float32")],
    # square, sum, scale, add: ~4 flops per element
    flops=lambda d: 4 * d.M * d.H,
    suite=SUITE,
    meta=meta(32, 2, "norm"),
)
