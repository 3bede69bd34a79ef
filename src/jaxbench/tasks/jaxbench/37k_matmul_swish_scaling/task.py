"""37k_matmul_swish_scaling (KernelBench level 2 #59, Matmul_Swish_Scaling).

``y = x @ W + b; out = swish(y) * 2.0`` with ``swish(v) = v * sigmoid(v)``.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16; output (M,
N) bf16. The GEMM accumulates in float32 and is rounded to bf16. The epilogue is computed in
float32 on the bf16-rounded GEMM output and cast back once (an all-bf16 chain of these ops
drifts by more than the 1e-2 tolerance from the float32 truth, as a fused kernel would not).
Full size M = 4096, K = N = 8192.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

SCALE = 2.0


def reference(x, w, b):
    y = ops.linear(x, w, b).astype(jnp.float32)
    return (ops.swish(y) * SCALE).astype(x.dtype)


TASK = Task(
    "37k_matmul_swish_scaling",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #59 Matmul_Swish_Scaling", family="gemm_epilogue",
              level="kernelbench", kernelbench_id=59),
)
