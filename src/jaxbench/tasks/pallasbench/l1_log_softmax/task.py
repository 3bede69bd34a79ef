"""l1_log_softmax (PallasBench #15): log-softmax over each row.

``out[i, j] = x[i, j] - log(sum_k exp(x[i, k]))`` (computed stably, after subtracting the
row max). x (2048, 2048) float32 ~ N(0, 1); output (2048, 2048) float32.
"""

import jax

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jax.nn.log_softmax(x, axis=-1)


TASK = Task(
    "l1_log_softmax",
    reference=reference,
    sizes={"small": dict(M=128, N=512), "full": dict(M=2048, N=2048)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # max, subtract, exp, sum, log (per row), subtract: ~5 flops per element
    flops=lambda d: 5 * d.M * d.N,
    suite=SUITE,
    meta=meta(15, 1, "softmax"),
)
