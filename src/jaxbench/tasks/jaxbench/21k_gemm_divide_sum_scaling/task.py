"""21k_gemm_divide_sum_scaling (KernelBench level 2 #14, Gemm_Divide_Sum_Scaling).

``out = sum_j((x @ W^T)[:, j] / 2) * 1.5``, keepdims, so out has shape (M, 1).

Inputs x (M, K) and weight (N, K) (PyTorch ``nn.Linear`` layout, out x in; no bias),
bf16; output (M, 1) bf16. The GEMM accumulates in float32 and is rounded to bf16 (as a
bf16 linear layer would) before the divide and the row sum. Full size M = 4096,
K = N = 8192.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

SCALING = 1.5


def reference(x, w):
    y = ops.linear(x, w, transpose_w=True) / 2
    return jnp.sum(y, axis=1, keepdims=True) * SCALING


TASK = Task(
    "21k_gemm_divide_sum_scaling",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.N, d.K), fan_in=d.K)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #14 Gemm_Divide_Sum_Scaling", family="gemm_reduction",
              level="kernelbench", kernelbench_id=14),
)
