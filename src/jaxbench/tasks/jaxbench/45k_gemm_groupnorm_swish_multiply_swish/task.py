"""45k_gemm_groupnorm_swish_multiply_swish (KernelBench level 2 #88, Gemm_GroupNorm_Swish_Multiply_Swish).

``y = GroupNorm(G)(x @ W^T + b) * gn_weight + gn_bias`` (eps 1e-5, biased variance,
float32 statistics, groups of 32 consecutive features), then
``out = swish(swish(y) * multiply_weight)`` with ``swish(v) = v * sigmoid(v)``.

Inputs x (M, K), weight (N, K) (PyTorch ``nn.Linear`` layout, ``x @ W^T``), bias (N,),
gn_weight (N,), gn_bias (N,), multiply_weight (N,), all bf16; output (M, N) bf16. The GEMM
accumulates in float32 and is rounded to bf16. The epilogue is computed in float32 on the
bf16-rounded GEMM output and cast back once (an all-bf16 chain of these ops drifts by more
than the 1e-2 tolerance from the float32 truth, as a fused kernel would not). Full size M =
4096, K = N = 8192, G = 256; small size N = 512, G = 16.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight

GROUP_SIZE = 32  # features per group: G = N / 32 (256 groups at full size)


def reference(x, w, b, gn_weight, gn_bias, multiply_weight):
    groups = w.shape[0] // GROUP_SIZE
    f32 = jnp.float32
    y = ops.linear(x, w, b, transpose_w=True).astype(f32)
    y = ops.group_norm(y, groups, gn_weight.astype(f32), gn_bias.astype(f32))
    return ops.swish(ops.swish(y) * multiply_weight.astype(f32)).astype(x.dtype)


TASK = Task(
    "45k_gemm_groupnorm_swish_multiply_swish",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.N, d.K), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1), uniform("gn_weight", (d.N,), 0.5, 1.5),
                      normal("gn_bias", (d.N,), scale=0.1), normal("multiply_weight", (d.N,))],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #88 Gemm_GroupNorm_Swish_Multiply_Swish",
              family="gemm_norm", level="kernelbench", kernelbench_id=88),
)
