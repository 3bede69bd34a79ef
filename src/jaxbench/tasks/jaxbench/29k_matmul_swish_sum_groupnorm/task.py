"""29k_matmul_swish_sum_groupnorm (KernelBench level 2 #37, Matmul_Swish_Sum_GroupNorm).

``h = x @ W; s = swish(h) + bias; out = GroupNorm(G groups)(s) * gn_weight + gn_bias``
with ``swish(v) = v * sigmoid(v)``; the group norm (eps 1e-5, biased variance, float32
statistics) normalises each row over each group of N / G consecutive features.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), gn_weight (N,),
gn_bias (N,), all bf16; output (M, N) bf16. The GEMM accumulates in float32 and is
rounded to bf16 (as a bf16 linear layer would); the epilogue runs in float32 and the
result is rounded once (bf16 rounding of the swish output, amplified by the division by
the group standard deviation, would otherwise eat the tolerance). The group size is
fixed at 64 features, G = N / 64: full size M = 8192, K = N = 4096, G = 64; small size
N = 512, G = 8.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight

GROUP_SIZE = 64  # features per group: G = N / 64 groups (64 groups at full size)


def reference(x, w, bias, gn_weight, gn_bias):
    groups = w.shape[1] // GROUP_SIZE
    h = ops.matmul(x, w).astype(jnp.float32)
    s = ops.swish(h) + bias
    return ops.group_norm(s, groups, gn_weight, gn_bias).astype(x.dtype)


TASK = Task(
    "29k_matmul_swish_sum_groupnorm",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=8192, K=4096, N=4096)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1), uniform("gn_weight", (d.N,), 0.5, 1.5),
                      normal("gn_bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #37 Matmul_Swish_Sum_GroupNorm", family="gemm_norm",
              level="kernelbench", kernelbench_id=37),
)
