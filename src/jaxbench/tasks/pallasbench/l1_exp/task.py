"""l1_exp (PallasBench #16): ``exp(x)`` elementwise.

``y = e^x``.
x (4096, 4096) float32 ~ N(0, 1); output (4096, 4096) float32.
Outputs reach about e^5 at the tails of N(0, 1); the relative tolerance covers them.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jnp.exp(x)


TASK = Task(
    "l1_exp",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # one exponential per element
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    meta=meta(16, 1, "elementwise"),
)
