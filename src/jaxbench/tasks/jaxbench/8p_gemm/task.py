"""8p_gemm: the Llama-3.1-70B FFN up-projection GEMM, ``A @ B`` in bf16.

Inputs A (M, K) and B (K, N); output (M, N) bf16, accumulated in float32.
Full size M = K = 8192, N = 28672.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(a, b):
    return ops.matmul(a, b)


TASK = Task(
    "8p_gemm",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=8192, K=8192, N=28672)},
    inputs=lambda d: [normal("A", (d.M, d.K)), weight("B", (d.K, d.N), fan_in=d.K)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="Llama-3.1-70B FFN", family="gemm", level="production", priority=True),
)
