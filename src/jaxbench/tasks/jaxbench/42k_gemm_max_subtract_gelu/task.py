"""42k_gemm_max_subtract_gelu (KernelBench level 2 #80, Gemm_Max_Subtract_GELU), repaired.

``y = x @ W + b; out = gelu(max_j y[:, j] - mean_j y[:, j])`` with keepdims and the
exact (erf) GELU: the row maximum of the GEMM output minus its row mean.

Repair: the original takes the max over axis 1 with keepdims, giving (M, 1), and then
subtracts that tensor's mean over axis 1 -- a size-1 axis -- so it subtracts the value
from itself and the output is identically gelu(0) = 0 regardless of the inputs. Here
the mean is taken over the feature axis of the (M, N) GEMM output instead, so every
input matters.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), all bf16;
output (M, 1) bf16. The GEMM accumulates in float32 and is rounded to bf16; the row mean
is accumulated in float32. Full size M = 4096, K = N = 8192.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight


def reference(x, w, b):
    y = ops.linear(x, w, b)
    mx = jnp.max(y, axis=1, keepdims=True)
    mean = jnp.mean(y.astype(jnp.float32), axis=1, keepdims=True).astype(y.dtype)
    return ops.gelu(mx - mean)


def unrepaired_reference(x, w, b):
    """The original computation: constant gelu(0) = 0, whatever the inputs."""
    mx = jnp.max(ops.linear(x, w, b), axis=1, keepdims=True)
    return ops.gelu(mx - jnp.mean(mx, axis=1, keepdims=True))


TASK = Task(
    "42k_gemm_max_subtract_gelu",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #80 Gemm_Max_Subtract_GELU", family="gemm_reduction",
              level="kernelbench", kernelbench_id=80,
              repair="the original subtracts the mean over the size-1 axis of the (M, 1) row max, "
                     "which is the max itself, so the output is identically gelu(0) = 0; the mean "
                     "is taken over the feature axis of the (M, N) GEMM output instead: "
                     "out = gelu(rowmax(y) - rowmean(y))"),
)
