"""26k_bmm_instancenorm_sum_residualadd_multiply (KernelBench level 2 #28), repaired.

Repaired computation (what this task measures)::

    h   = x @ W^T + b                                  # (M, N)
    n   = (h - mean_j h) * rsqrt(var_j h + 1e-5)       # instance norm over the N features of each row
    out = (n * in_weight + in_bias + y) * y

Inputs x (M, K), y (M, N), weight (N, K) (PyTorch ``nn.Linear`` layout, out x in),
bias (N,), in_weight (N,), in_bias (N,), all bf16; output (M, N) bf16. The GEMM
accumulates in float32 and is rounded to bf16 (as a bf16 linear layer would); the norm and
the elementwise epilogue run in float32 and the result is rounded once. Full size M = 4096, K = N = 8192.

Degeneracy and repair: the catalogue's translation applies the affine instance norm to
the activations viewed as (M, N, 1, 1), i.e. over a 1x1 spatial map. Each "instance" then
holds one value, h - mean(h) = 0, and the norm returns in_bias exactly, so x, weight, bias
and in_weight have no effect and out = (in_bias + y) * y (see ``unrepaired_reference``).
The smallest repair that keeps the op sequence is to let the instance norm's spatial
extent be the feature axis (the activations viewed as (M, 1, 1, N), as the PyTorch
original reshapes them), keeping the per-feature affine in_weight / in_bias, so every
input matters.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight

EPS = 1e-5


def reference(x, y, w, b, in_weight, in_bias):
    h = ops.linear(x, w, b, transpose_w=True)
    hf = h.astype(jnp.float32)
    mean = hf.mean(axis=1, keepdims=True)
    var = hf.var(axis=1, keepdims=True)
    n = (hf - mean) * jax.lax.rsqrt(var + EPS) * in_weight + in_bias
    return ((n + y) * y).astype(x.dtype)


def unrepaired_reference(x, y, w, b, in_weight, in_bias):
    """The degenerate original: instance norm over a 1x1 map (x, w, b, in_weight are dead)."""
    h = ops.linear(x, w, b, transpose_w=True)[:, :, None, None].astype(jnp.float32)
    mean = h.mean(axis=(2, 3), keepdims=True)
    var = h.var(axis=(2, 3), keepdims=True)
    n = ((h - mean) * jax.lax.rsqrt(var + EPS))[:, :, 0, 0].astype(x.dtype)
    n = n * in_weight + in_bias
    return (n + y) * y


TASK = Task(
    "26k_bmm_instancenorm_sum_residualadd_multiply",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), normal("y", (d.M, d.N)),
                      weight("weight", (d.N, d.K), fan_in=d.K), normal("bias", (d.N,), scale=0.1),
                      uniform("in_weight", (d.N,), 0.5, 1.5), normal("in_bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    # The bf16 GEMM output h (relative rounding 2^-9) is normalised (|n| up to ~4), scaled by
    # in_weight and multiplied by y (|y| up to ~4): the bf16 baseline's error reaches ~0.025
    # absolute where (n*in_weight + in_bias + y) cancels, so atol is 4e-2 (rtol stays 1e-2).
    atol=4e-2,
    meta=dict(source="KernelBench level 2 #28 BMM_InstanceNorm_Sum_ResidualAdd_Multiply",
              family="gemm_norm", level="kernelbench", kernelbench_id=28,
              repair="instance norm over the feature axis (spatial extent = the N features of "
                     "each row) instead of over a 1x1 spatial map, which returned in_bias and "
                     "made x, weight, bias and in_weight dead"),
)
