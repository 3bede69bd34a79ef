"""49k_matmul_avgpool_gelu_scale_max (KernelBench level 2 #98, Matmul_AvgPool_GELU_Scale_Max).

``y = x @ W + b``; average-pool each row over windows of 16 consecutive features
(N/16 windows, stride 16); ``out = max_w(gelu(pooled) * 2.0)`` with the exact (erf) GELU.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M,) bf16. The GEMM accumulates in float32 and is rounded to bf16; window means
are accumulated in float32. Full size M = 4096, K = N = 8192 (512 windows).
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

POOL = 16
SCALE = 2.0


def reference(x, w, b):
    y = ops.linear(x, w, b)
    m, n = y.shape
    pooled = jnp.mean(y.astype(jnp.float32).reshape(m, n // POOL, POOL), axis=2).astype(y.dtype)
    return jnp.max(ops.gelu(pooled) * SCALE, axis=1)


TASK = Task(
    "49k_matmul_avgpool_gelu_scale_max",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #98 Matmul_AvgPool_GELU_Scale_Max", family="gemm_reduction",
              level="kernelbench", kernelbench_id=98),
)
