"""l2_geglu (PallasBench #35): ``gelu_tanh(X @ W_g) * (X @ W_u)`` (the gated half of a GeGLU MLP).

``gelu_tanh(y) = 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3)))`` (the tanh approximation).
X (512, 1024) float32 ~ N(0, 1); W_g, W_u (1024, 2048) float32 ~ N(0, 1/1024) (so both
projections stay O(1)); output (512, 2048) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w_g, w_u):
    return jax.nn.gelu(jnp.matmul(x, w_g), approximate=True) * jnp.matmul(x, w_u)


TASK = Task(
    "l2_geglu",
    reference=reference,
    sizes={"small": dict(M=128, K=512, N=512), "full": dict(M=512, K=1024, N=2048)},
    inputs=lambda d: [normal("X", (d.M, d.K), dtype="float32"),
                      weight("W_g", (d.K, d.N), fan_in=d.K, dtype="float32"),
                      weight("W_u", (d.K, d.N), fan_in=d.K, dtype="float32")],
    # two matmuls, then ~9 flops per element for the tanh-GELU and the gating product
    flops=lambda d: 2 * 2 * d.M * d.K * d.N + 9 * d.M * d.N,
    suite=SUITE,
    meta=meta(35, 2, "mlp"),
)
