"""l1_multiply (PallasBench #20): ``x * y`` elementwise (Hadamard product).

``out = x * y``.
x, y (4096, 4096) float32, each ~ N(0, 1); output (4096, 4096) float32.
"""

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x, y):
    return x * y


TASK = Task(
    "l1_multiply",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32"),
                      normal("y", (d.M, d.N), dtype="float32")],
    # one multiply per element
    flops=lambda d: d.M * d.N,
    suite=SUITE,
    meta=meta(20, 1, "elementwise"),
)
