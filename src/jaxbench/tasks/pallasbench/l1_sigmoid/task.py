"""l1_sigmoid (PallasBench #4): ``sigmoid(x) = 1 / (1 + exp(-x))`` elementwise.

x (4096, 4096) float32 ~ N(0, 1); output (4096, 4096) float32.
"""

import jax

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jax.nn.sigmoid(x)


TASK = Task(
    "l1_sigmoid",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # negate, exp, add one, reciprocal
    flops=lambda d: 3 * d.M * d.N,
    suite=SUITE,
    meta=meta(4, 1, "elementwise"),
)
