"""l2_layernorm_residual (PallasBench #33): ``layernorm(x) + r``.

``layernorm(x) = (x - mean(x)) / sqrt(var(x) + 1e-5)`` per row (biased variance, no affine).
x, r (2048, 1024) float32 ~ N(0, 1); output (2048, 1024) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal

EPS = 1e-5


def reference(x, r):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)
    return xc * jax.lax.rsqrt(var + EPS) + r


TASK = Task(
    "l2_layernorm_residual",
    reference=reference,
    sizes={"small": dict(M=256, H=1024), "full": dict(M=2048, H=1024)},
    inputs=lambda d: [normal("x", (d.M, d.H), dtype="float32"),
                      normal("r", (d.M, d.H), dtype="float32")],
    # mean, centre, square, sum, scale, add: ~6 flops per element
    flops=lambda d: 6 * d.M * d.H,
    suite=SUITE,
    meta=meta(33, 2, "norm"),
)
