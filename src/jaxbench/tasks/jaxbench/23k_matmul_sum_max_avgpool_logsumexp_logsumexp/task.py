"""23k_matmul_sum_max_avgpool_logsumexp_logsumexp (KernelBench level 2 #18).

``v = sum_j (x @ W^T + b)[:, j]`` (keepdims, (M, 1)), then max, mean, logsumexp and
logsumexp, each over the size-1 axis 1 with keepdims. Every op after the sum acts on a
single element per row and is the identity, so out = v; the reference still runs the
chain as the original (Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp) does.

Inputs x (M, K), weight (N, K) (PyTorch ``nn.Linear`` layout, out x in), bias (N,),
bf16; output (M, 1) bf16. The GEMM accumulates in float32 and is rounded to bf16 before
the row sum. Full size M = 4096, K = N = 8192.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    y = ops.linear(x, w, b, transpose_w=True)
    v = jnp.sum(y, axis=1, keepdims=True)
    v = jnp.max(v, axis=1, keepdims=True)
    v = jnp.mean(v, axis=1, keepdims=True)
    v = jax.nn.logsumexp(v, axis=1, keepdims=True)
    return jax.nn.logsumexp(v, axis=1, keepdims=True)


TASK = Task(
    "23k_matmul_sum_max_avgpool_logsumexp_logsumexp",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.N, d.K), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #18 Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp",
              family="gemm_reduction", level="kernelbench", kernelbench_id=18),
)
