"""l1_softmax (PallasBench #14): softmax over each row.

``y[i, j] = exp(x[i, j] - max_k x[i, k]) / sum_k exp(x[i, k] - max_k x[i, k])``.
x (2048, 2048) float32 ~ N(0, 1); output (2048, 2048) float32.
"""

import jax

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jax.nn.softmax(x, axis=-1)


TASK = Task(
    "l1_softmax",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=2048, N=2048)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # max, subtract, exp, sum, divide: ~5 flops per element
    flops=lambda d: 5 * d.M * d.N,
    suite=SUITE,
    # probabilities of ~1/2048: under atol 1e-2 an all-zero output would pass
    atol=1e-6,
    meta=meta(14, 1, "softmax"),
)
