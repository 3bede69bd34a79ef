"""l1_tanh (PallasBench #5): ``tanh(x)`` elementwise.

x (4096, 4096) float32 ~ N(0, 1); output (4096, 4096) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jnp.tanh(x)


TASK = Task(
    "l1_tanh",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # one tanh per element
    flops=lambda d: 1 * d.M * d.N,
    suite=SUITE,
    meta=meta(5, 1, "elementwise"),
)
