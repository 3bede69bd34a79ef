"""41k_gemm_add_relu (KernelBench level 2 #76, Gemm_Add_ReLU).

``out = relu(x @ W + b)``.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16 before the
bias add. Full size M = 4096, K = N = 8192.
"""

import jax

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    return jax.nn.relu(ops.linear(x, w, b))


TASK = Task(
    "41k_gemm_add_relu",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #76 Gemm_Add_ReLU", family="gemm_epilogue",
              level="kernelbench", kernelbench_id=76),
)
