"""40k_gemm_groupnorm_min_biasadd (KernelBench level 2 #75, Gemm_GroupNorm_Min_BiasAdd).

``y = GroupNorm(G)(x @ W^T + linear_bias) * gn_weight + gn_bias`` (eps 1e-5, biased
variance, float32 statistics, groups of 16 consecutive features), then
``m = min_j y[:, j]`` (M,), and, broadcasting as the original does,
``out[0, c, i, 0] = m[i] + bias[0, c, 0, 0]``.

Inputs x (M, K), weight (N, K) (PyTorch ``nn.Linear`` layout, ``x @ W^T``), linear_bias
(N,), gn_weight (N,), gn_bias (N,), bias (1, N, 1, 1), all bf16; output (1, N, M, 1) bf16
(the original's (M, 1) minimum plus a (1, N, 1, 1) bias broadcasts to this 4-D shape: 8192 x
4096 elements at full size). The GEMM accumulates in float32 and is rounded to bf16. The
epilogue is computed in float32 on the bf16-rounded GEMM output and cast back once (an all-
bf16 chain of these ops drifts by more than the 1e-2 tolerance from the float32 truth, as a
fused kernel would not). Full size M = 4096, K = N = 8192, G = 512; small size N = 512, G =
32.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight

GROUP_SIZE = 16  # features per group: G = N / 16 (512 groups at full size)


def reference(x, w, linear_bias, gn_weight, gn_bias, bias):
    groups = w.shape[0] // GROUP_SIZE
    f32 = jnp.float32
    y = ops.linear(x, w, linear_bias, transpose_w=True).astype(f32)
    y = ops.group_norm(y, groups, gn_weight.astype(f32), gn_bias.astype(f32))
    m = jnp.min(y, axis=1, keepdims=True)  # (M, 1)
    return (m + bias.astype(f32)).astype(x.dtype)  # (M, 1) + (1, N, 1, 1) -> (1, N, M, 1)


TASK = Task(
    "40k_gemm_groupnorm_min_biasadd",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.N, d.K), fan_in=d.K),
                      normal("linear_bias", (d.N,), scale=0.1),
                      uniform("gn_weight", (d.N,), 0.5, 1.5), normal("gn_bias", (d.N,), scale=0.1),
                      normal("bias", (1, d.N, 1, 1), scale=1.0)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #75 Gemm_GroupNorm_Min_BiasAdd", family="gemm_norm",
              level="kernelbench", kernelbench_id=75),
)
