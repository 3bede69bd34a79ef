"""27k_matmul_mish_mish (KernelBench level 2 #29, Matmul_Mish_Mish).

``out = mish(mish(x @ W + b))`` with ``mish(v) = v * tanh(softplus(v))``.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16 before the
epilogue. Full size M = 4096, K = N = 8192.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    return ops.mish(ops.mish(ops.linear(x, w, b)))


TASK = Task(
    "27k_matmul_mish_mish",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #29 Matmul_Mish_Mish", family="gemm_epilogue",
              level="kernelbench", kernelbench_id=29),
)
