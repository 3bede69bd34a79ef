"""44k_matmul_divide_gelu (KernelBench level 2 #86, Matmul_Divide_GELU).

``out = gelu((x @ W + b) / 10.0)`` with the exact (erf) GELU.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16 before the
epilogue. Full size M = 4096, K = N = 8192.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

DIVISOR = 10.0


def reference(x, w, b):
    return ops.gelu(ops.linear(x, w, b) / DIVISOR)


TASK = Task(
    "44k_matmul_divide_gelu",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #86 Matmul_Divide_GELU", family="gemm_epilogue",
              level="kernelbench", kernelbench_id=86),
)
