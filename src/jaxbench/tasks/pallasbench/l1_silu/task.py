"""l1_silu (PallasBench #3): ``silu(x) = x * sigmoid(x) = x / (1 + exp(-x))`` elementwise.

x (4096, 4096) float32 ~ N(0, 1); output (4096, 4096) float32.
"""

import jax

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jax.nn.silu(x)


TASK = Task(
    "l1_silu",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # negate, exp, add one, divide
    flops=lambda d: 4 * d.M * d.N,
    suite=SUITE,
    meta=meta(3, 1, "elementwise"),
)
