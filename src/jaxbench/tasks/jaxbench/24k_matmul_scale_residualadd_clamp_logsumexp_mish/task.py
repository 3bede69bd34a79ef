"""24k_matmul_scale_residualadd_clamp_logsumexp_mish (KernelBench level 2 #22).

``y = (x @ W^T + b) * 2; y = y + y; y = clip(y, -10, 10);
l = logsumexp(y, axis=1, keepdims); out = l * mish(l)`` with
``mish(v) = v * tanh(softplus(v))``.

Inputs x (M, K), weight (N, K) (PyTorch ``nn.Linear`` layout, out x in), bias (N,),
bf16; output (M, 1) bf16. The GEMM accumulates in float32 and is rounded to bf16
before the epilogue; the logsumexp runs in float32. Source:
Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish. Full size M = 4096, K = N = 8192.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

SCALE = 2.0
CLAMP = 10.0


def reference(x, w, b):
    y = ops.linear(x, w, b, transpose_w=True) * SCALE
    y = y + y
    y = jnp.clip(y, -CLAMP, CLAMP)
    lse = jax.nn.logsumexp(y.astype(jnp.float32), axis=1, keepdims=True)
    return (lse * ops.mish(lse)).astype(x.dtype)


TASK = Task(
    "24k_matmul_scale_residualadd_clamp_logsumexp_mish",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.N, d.K), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #22 Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish",
              family="gemm_reduction", level="kernelbench", kernelbench_id=22),
)
