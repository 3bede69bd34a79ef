"""14p_ragged_dot: Mixtral-8x7B per-expert matmul, ``out[g] = x[g] @ weights[g]``.

Inputs x (G, M, K) bf16 (tokens already grouped per expert, the same count per
group) and weights (G, K, N) bf16; output (G, M, N) bf16, accumulated in float32.
A batched matmul. Full size G = 8 experts, M = 1024 tokens per expert, K = 4096
(d_model), N = 14336 (FFN hidden).
"""

import jax.numpy as jnp

from jaxbench.tasks.spec import Task, normal, weight


def reference(x, weights):
    out = jnp.einsum("gmk,gkn->gmn", x, weights, preferred_element_type=jnp.float32)
    return out.astype(x.dtype)


TASK = Task(
    "14p_ragged_dot",
    reference=reference,
    sizes={"small": dict(G=8, M=128, K=256, N=256),
           "full": dict(G=8, M=1024, K=4096, N=14336)},
    inputs=lambda d: [normal("x", (d.G, d.M, d.K)),
                      weight("weights", (d.G, d.K, d.N), fan_in=d.K)],
    flops=lambda d: 2 * d.G * d.M * d.K * d.N,
    meta=dict(source="Mixtral-8x7B MoE expert FFN", family="gemm", level="production"),
)
