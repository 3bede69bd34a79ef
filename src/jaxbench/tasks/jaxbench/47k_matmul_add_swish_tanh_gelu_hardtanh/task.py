"""47k_matmul_add_swish_tanh_gelu_hardtanh (KernelBench level 2 #95, Matmul_Add_Swish_Tanh_GELU_Hardtanh).

``y = x @ W + b + add_value; out = clip(gelu(tanh(swish(y))), -1, 1)`` with
``swish(v) = v * sigmoid(v)`` and the exact (erf) GELU.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), add_value (N,),
all bf16; output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16
before the epilogue. Full size M = 4096, K = N = 8192.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b, add_value):
    y = ops.linear(x, w, b) + add_value
    return jnp.clip(ops.gelu(jnp.tanh(ops.swish(y))), -1.0, 1.0)


TASK = Task(
    "47k_matmul_add_swish_tanh_gelu_hardtanh",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1), normal("add_value", (d.N,), scale=0.5)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #95 Matmul_Add_Swish_Tanh_GELU_Hardtanh",
              family="gemm_epilogue", level="kernelbench", kernelbench_id=95),
)
