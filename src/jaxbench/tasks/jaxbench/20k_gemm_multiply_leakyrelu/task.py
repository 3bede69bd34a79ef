"""20k_gemm_multiply_leakyrelu (KernelBench level 2 #12, Gemm_Multiply_LeakyReLU).

``out = leaky_relu((x @ W + b) * 2.0, negative_slope=0.1)``

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16 before the
epilogue, as a bf16 ``nn.Linear`` would. Full size M = 4096, K = N = 8192.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

MULTIPLIER = 2.0
NEGATIVE_SLOPE = 0.1


def reference(x, w, b):
    y = ops.linear(x, w, b) * MULTIPLIER
    return jnp.where(y >= 0, y, y * NEGATIVE_SLOPE)


TASK = Task(
    "20k_gemm_multiply_leakyrelu",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #12 Gemm_Multiply_LeakyReLU", family="gemm_epilogue",
              level="kernelbench", kernelbench_id=12),
)
