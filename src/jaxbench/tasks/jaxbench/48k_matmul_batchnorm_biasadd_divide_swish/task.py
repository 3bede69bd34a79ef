"""48k_matmul_batchnorm_biasadd_divide_swish (KernelBench level 2 #97, Matmul_BatchNorm_BiasAdd_Divide_Swish).

``y = x @ W + linear_bias; z = (BN_eval(y) + bias) / 1.0; out = swish(z)`` with
``BN_eval(y) = (y - bn_mean) * rsqrt(bn_var + 1e-5) * bn_scale + bn_bias`` (given
running statistics, eval mode) and ``swish(v) = v * sigmoid(v)``.

Inputs x (M, K), weight (K, N) (``x @ W`` layout, in x out), linear_bias (N,), bn_scale,
bn_bias, bn_mean, bn_var (N,) (variance drawn from U[0.5, 1.5)), bias (1,), all bf16; output
(M, N) bf16. The GEMM accumulates in float32 and is rounded to bf16. The epilogue is
computed in float32 on the bf16-rounded GEMM output and cast back once (an all-bf16 chain of
these ops drifts by more than the 1e-2 tolerance from the float32 truth, as a fused kernel
would not). Full size M = 4096, K = N = 8192.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight

DIVIDE_VALUE = 1.0


def reference(x, w, linear_bias, bn_scale, bn_bias, bn_mean, bn_var, bias):
    f32 = jnp.float32
    y = ops.linear(x, w, linear_bias).astype(f32)
    y = ops.batch_norm_eval(y, *(v.astype(f32) for v in (bn_scale, bn_bias, bn_mean, bn_var)))
    return ops.swish((y + bias.astype(f32)) / DIVIDE_VALUE).astype(x.dtype)


TASK = Task(
    "48k_matmul_batchnorm_biasadd_divide_swish",
    reference=reference,
    sizes={"small": dict(M=512, K=1024, N=512), "full": dict(M=4096, K=8192, N=8192)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("weight", (d.K, d.N), fan_in=d.K),
                      normal("linear_bias", (d.N,), scale=0.1), uniform("bn_scale", (d.N,), 0.5, 1.5),
                      normal("bn_bias", (d.N,), scale=0.1), normal("bn_mean", (d.N,), scale=0.1),
                      uniform("bn_var", (d.N,), 0.5, 1.5), normal("bias", (1,), scale=0.5)],
    flops=lambda d: 2 * d.M * d.K * d.N,
    meta=dict(source="KernelBench level 2 #97 Matmul_BatchNorm_BiasAdd_Divide_Swish",
              family="gemm_epilogue", level="kernelbench", kernelbench_id=97),
)
