"""l1_add (PallasBench #19): ``x + y`` elementwise.

``out = x + y``.
x, y (4096, 4096) float32, each ~ N(0, 1); output (4096, 4096) float32.
"""

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x, y):
    return x + y


TASK = Task(
    "l1_add",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32"),
                      normal("y", (d.M, d.N), dtype="float32")],
    # one add per element
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    meta=meta(19, 1, "elementwise"),
)
