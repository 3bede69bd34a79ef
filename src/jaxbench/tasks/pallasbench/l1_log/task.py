"""l1_log (PallasBench #17): ``log(x + 1e-7)`` elementwise.

``y = log(x + 1e-7)``.
x (4096, 4096) float32 ~ U[0.1, 5); output (4096, 4096) float32.
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, uniform

EPS = 1e-7


def reference(x):
    return jnp.log(x + EPS)


TASK = Task(
    "l1_log",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [uniform("x", (d.M, d.N), 0.1, 5.0, dtype="float32")],
    # add and logarithm
    flops=lambda d: 2 * d.M * d.N,
    suite=SUITE,
    meta=meta(17, 1, "elementwise"),
)
