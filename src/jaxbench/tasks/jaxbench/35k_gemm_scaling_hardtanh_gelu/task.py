"""35k_gemm_scaling_hardtanh_gelu (KernelBench level 2 #53, Gemm_Scaling_Hardtanh_GELU).

``out = gelu_tanh(clip((x @ W + b) * 0.5, -2, 2))`` where gelu_tanh is the tanh
approximation of GELU.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16 before the
epilogue. Full size M = 4096, K = N = 8192.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

SCALE = 0.5
CLIP = 2.0


def reference(x, w, b):
    y = ops.linear(x, w, b) * SCALE
    return ops.gelu(jnp.clip(y, -CLIP, CLIP), approximate=True)


TASK = Task(
    "35k_gemm_scaling_hardtanh_gelu",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #53 Gemm_Scaling_Hardtanh_GELU", family="gemm_epilogue",
              level="kernelbench", kernelbench_id=53),
)
