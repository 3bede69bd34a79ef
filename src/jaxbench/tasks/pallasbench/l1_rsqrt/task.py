"""l1_rsqrt (PallasBench #18): ``rsqrt(x + 1e-5)`` elementwise.

``y = 1 / sqrt(x + 1e-5)``.
x (4096, 4096) float32 ~ U[0.1, 5); output (4096, 4096) float32.
"""

import jax

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, uniform

EPS = 1e-5


def reference(x):
    return jax.lax.rsqrt(x + EPS)


TASK = Task(
    "l1_rsqrt",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [uniform("x", (d.M, d.N), 0.1, 5.0, dtype="float32")],
    # add and reciprocal square root
    flops=lambda d: 2 * d.M * d.N,
    suite=SUITE,
    meta=meta(18, 1, "elementwise"),
)
