"""43k_gemm_batchnorm_scaling_softmax (KernelBench level 2 #84, Gemm_BatchNorm_Scaling_Softmax).

``y = x @ W + b; z = scale * BN_eval(y); out = softmax(z, axis=1)`` with
``BN_eval(y) = (y - bn_mean) * rsqrt(bn_var + 1e-5) * bn_scale + bn_bias`` (given
running statistics, eval mode).

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), bias (N,), bn_scale,
bn_bias, bn_mean, bn_var (N,) (variance drawn from U[0.5, 1.5)), scale (1,), all bf16;
output (M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16; batch norm,
scaling and softmax are computed in float32 and cast back once (an all-bf16 chain of the
BN ops moves the logits by up to several 1e-2). Full size M = 4096, K = N = 8192.

Tolerance: softmax outputs are about 1/N (~1e-4 at full size), far below the default
atol of 1e-2, so a kernel returning zeros would pass; atol is lowered to 1e-6 and the
comparison is effectively relative. rtol is 5e-2: rounding the GEMM output y to bf16, as
written above, moves a logit by up to scale * bn_scale / sqrt(bn_var) * |y| * 2^-9, about
3e-2 (a kernel that does round measured up to 4e-2 relative error; XLA on CPU elides that
rounding inside its fusion, so the bf16 reference itself looks far more accurate).
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, b, bn_scale, bn_bias, bn_mean, bn_var, scale):
    f32 = jnp.float32
    y = ops.linear(x, w, b).astype(f32)
    y = ops.batch_norm_eval(y, *(v.astype(f32) for v in (bn_scale, bn_bias, bn_mean, bn_var)))
    return jax.nn.softmax(scale.astype(f32) * y, axis=1).astype(x.dtype)


TASK = Task(
    "43k_gemm_batchnorm_scaling_softmax",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("bias", (d.N,), scale=0.1), uniform("bn_scale", (d.N,), 0.5, 1.5),
                      normal("bn_bias", (d.N,), scale=0.1), normal("bn_mean", (d.N,), scale=0.1),
                      uniform("bn_var", (d.N,), 0.5, 1.5), uniform("scale", (1,), 0.5, 1.5)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    atol=1e-6,
    rtol=5e-2,
    meta=dict(source="KernelBench level 2 #84 Gemm_BatchNorm_Scaling_Softmax", family="gemm_softmax",
              level="kernelbench", kernelbench_id=84),
)
