"""l3_gated_mlp (PallasBench #43): SwiGLU-style gated MLP.

``out = (silu(X W_g) ⊙ (X W_u)) W_d`` with ``silu(a) = a · sigmoid(a)``.

X (M, D) = (256, 512) float32 ~ N(0, 1); W_g, W_u (D, F) = (512, 1024) and
W_d (F, D) = (1024, 512) float32 weights ~ N(0, 1/fan_in); output (M, D) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w_g, w_u, w_d):
    h = jax.nn.silu(jnp.dot(x, w_g)) * jnp.dot(x, w_u)
    return jnp.dot(h, w_d)


TASK = Task(
    "l3_gated_mlp",
    reference=reference,
    sizes={"small": dict(M=128, D=256, F=512), "full": dict(M=256, D=512, F=1024)},
    inputs=lambda d: [normal("X", (d.M, d.D), dtype="float32"),
                      weight("W_g", (d.D, d.F), fan_in=d.D, dtype="float32"),
                      weight("W_u", (d.D, d.F), fan_in=d.D, dtype="float32"),
                      weight("W_d", (d.F, d.D), fan_in=d.F, dtype="float32")],
    # three matmuls (2 M D F each) plus silu and the gate product (~5 M F)
    flops=lambda d: 6 * d.M * d.D * d.F + 5 * d.M * d.F,
    suite=SUITE,
    meta=meta(43, 3, "mlp"),
)
