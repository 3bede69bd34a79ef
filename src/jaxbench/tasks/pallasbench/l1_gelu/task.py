"""l1_gelu (PallasBench #2): tanh-approximate GELU elementwise (``jax.nn.gelu`` default).

``gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
x (4096, 4096) float32 ~ N(0, 1); output (4096, 4096) float32.
"""

import jax

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(x):
    return jax.nn.gelu(x, approximate=True)


TASK = Task(
    "l1_gelu",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.N), dtype="float32")],
    # cube (2), scale and add (2), scale (1), tanh (1), add one (1), two multiplies (2)
    flops=lambda d: 9 * d.M * d.N,
    suite=SUITE,
    meta=meta(2, 1, "elementwise"),
)
