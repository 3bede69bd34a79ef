"""36k_matmul_sigmoid_sum (KernelBench level 2 #56, Matmul_Sigmoid_Sum).

``out = sum_j sigmoid(x @ W + b)[:, j]`` with keepdims, a row sum over the N features.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, 1) bf16. The GEMM accumulates in float32 and is rounded to bf16 before the
epilogue; the row sum is accumulated in float32 and cast back. Full size M = 4096,
K = N = 8192.

Tolerance: each row sum is N/2 plus fluctuations of order sqrt(N), so the outputs vary
by only about 0.4 % across rows at full size (4096 +- 16, where bf16's spacing is 32).
With the default rtol of 1e-2 a kernel that ignores x and returns a constant near N/2
would pass at full size; rtol is tightened to 5e-3, which the bf16 reference still
meets (its error is the output's bf16 rounding, up to half a spacing, 2^-9 relative).
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    s = jax.nn.sigmoid(ops.linear(x, w, b))
    return jnp.sum(s.astype(jnp.float32), axis=1, keepdims=True).astype(x.dtype)


TASK = Task(
    "36k_matmul_sigmoid_sum",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    rtol=5e-3,  # see the docstring: the default would accept a constant output
    meta=dict(source="KernelBench level 2 #56 Matmul_Sigmoid_Sum", family="gemm_reduction",
              level="kernelbench", kernelbench_id=56),
)
