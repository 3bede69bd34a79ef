"""l2_swiglu (PallasBench #34): ``silu(X @ W_g) * (X @ W_u)`` (the gated half of a SwiGLU MLP).

X (512, 1024) float32 ~ N(0, 1); W_g, W_u (1024, 2048) float32 ~ N(0, 1/1024) (so both
projections stay O(1)); output (512, 2048) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w_g, w_u):
    return jax.nn.silu(jnp.matmul(x, w_g)) * jnp.matmul(x, w_u)


TASK = Task(
    "l2_swiglu",
    reference=reference,
    sizes={"small": dict(M=128, K=512, N=512), "full": dict(M=512, K=1024, N=2048)},
    inputs=lambda d: [normal("X", (d.M, d.K), dtype="float32"),
                      weight("W_g", (d.K, d.N), fan_in=d.K, dtype="float32"),
                      weight("W_u", (d.K, d.N), fan_in=d.K, dtype="float32")],
    # two matmuls, then ~5 flops per element for the SiLU and the gating product
    flops=lambda d: 2 * 2 * d.M * d.K * d.N + 5 * d.M * d.N,
    suite=SUITE,
    meta=meta(34, 2, "mlp"),
)
