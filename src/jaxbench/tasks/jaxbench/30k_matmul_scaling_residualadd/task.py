"""30k_matmul_scaling_residualadd (KernelBench level 2 #40, Matmul_Scaling_ResidualAdd).

``y = x @ W + b; out = y * 0.5 + y`` (the original scales a copy of y and adds y back).

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16 before the
epilogue. Full size M = 16384, K = N = 4096.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

SCALING = 0.5


def reference(x, w, b):
    y = ops.linear(x, w, b)
    return y * SCALING + y


TASK = Task(
    "30k_matmul_scaling_residualadd",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=16384, K=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #40 Matmul_Scaling_ResidualAdd", family="gemm_epilogue",
              level="kernelbench", kernelbench_id=40),
)
