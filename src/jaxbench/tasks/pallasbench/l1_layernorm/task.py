"""l1_layernorm (PallasBench #6): LayerNorm over each row, no affine parameters.

``y = (x - mean(x)) / sqrt(var(x) + 1e-5)`` with the mean and the (biased, population)
variance taken over the last axis. x (2048, 1024) float32 ~ N(0, 1); output (2048, 1024)
float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal

EPS = 1e-5


def reference(x):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mean
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)
    return xc * jax.lax.rsqrt(var + EPS)


TASK = Task(
    "l1_layernorm",
    reference=reference,
    sizes={"small": dict(M=128, N=1024), "full": dict(M=2048, N=1024)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # sum, subtract, square, sum, scale: ~5 flops per element
    flops=lambda d: 5 * d.M * d.N,
    suite=SUITE,
    meta=meta(6, 1, "norm"),
)
