"""31k_gemm_batchnorm_gelu_relu (KernelBench level 2 #41, Gemm_BatchNorm_GELU_ReLU), repaired.

Repaired computation (what this task measures)::

    h   = x @ W^T                                     # (M, N), no bias before the norm
    out = relu(gelu(BN_train(h) + b))                 # bias added per feature after the BN affine

where BN_train normalises each feature with the batch statistics over the M rows (mean,
biased variance, eps 1e-5, float32 statistics) and applies the affine bn_weight, bn_bias;
gelu is the exact (erf) form.

Inputs x (M, K), weight (N, K) (PyTorch ``nn.Linear`` layout, out x in), bias (N,),
bn_weight (N,), bn_bias (N,), all bf16; output (M, N) bf16. The GEMM accumulates in
float32 and is rounded to bf16 (as a bf16 linear layer would); the batch norm, bias and
activations run in float32 and the result is rounded once. Full size M = 16384, K = N = 8192.

Degeneracy and repair: the original adds the linear bias before the batch norm; the batch
statistics remove any per-feature constant, so the bias cancels exactly and has no effect
(see ``unrepaired_reference``). The smallest repair that keeps the op sequence and the input
list moves the linear bias past the norm: it is added per feature after the BN affine,
before the GELU, so every input matters.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, b, bn_weight, bn_bias):
    h = ops.linear(x, w, transpose_w=True).astype(jnp.float32)
    out = jax.nn.relu(ops.gelu(ops.batch_norm_train(h, bn_weight, bn_bias) + b))
    return out.astype(x.dtype)


def unrepaired_reference(x, w, b, bn_weight, bn_bias):
    """The degenerate original: the linear bias before the batch norm, which cancels it."""
    h = ops.linear(x, w, b, transpose_w=True).astype(jnp.float32)
    out = jax.nn.relu(ops.gelu(ops.batch_norm_train(h, bn_weight, bn_bias)))
    return out.astype(x.dtype)


TASK = Task(
    "31k_gemm_batchnorm_gelu_relu",
    reference=reference,
    sizes={"small": dict(M=256, K=512, N=512), "full": dict(M=16384, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.N, d.K), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1), uniform("bn_weight", (d.N,), 0.5, 1.5),
                      normal("bn_bias", (d.N,), scale=0.1)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #41 Gemm_BatchNorm_GELU_ReLU", family="gemm_norm",
              level="kernelbench", kernelbench_id=41,
              repair="the linear bias moved from before the batch norm (whose per-feature batch "
                     "mean subtraction cancelled it exactly) to after the BN affine, per feature, "
                     "before the GELU: out = relu(gelu(BN_train(x W^T) + b))"),
)
