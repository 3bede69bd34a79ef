"""34k_conv2d_activation_batchnorm (KernelBench Level 2 #52): BN_train(mish-like(conv2d(x) + b)).

x (N, CI, H, W) ~ U[0, 1) bf16 (NCHW); weight (CO, CI, 3, 3) bf16 (OIHW); conv_bias,
bn_weight, bn_bias (CO,). y = conv(x) + conv_bias (stride 1, VALID, f32 accumulation);
y = tanh(softplus(y))·y; BatchNorm in training mode: per-channel batch statistics over
(N, H-2, W-2), biased variance, eps 1e-5, affine bn_weight/bn_bias; the activation and the
norm are computed in float32 (see reference) and cast back to bf16 once.
Output (N, CO, H - 2, W - 2) bf16. Full size N=64, CI=64, CO=128, H=W=128.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, conv_bias, bn_weight, bn_bias):
    y = ops.conv(x, w) + conv_bias[:, None, None]
    # The activation and the norm run in float32 and are cast back once: channels whose
    # pre-activation sits near mish's minimum (y ≈ -1.2) have a tiny batch std, and bf16
    # rounding of the activation there would be magnified ~40x by the normalisation.
    a = ops.mish(y.astype(jnp.float32))  # tanh(softplus(y)) * y
    return ops.batch_norm_train(a, bn_weight, bn_bias, axes=(0, 2, 3)).astype(x.dtype)


TASK = Task(
    "34k_conv2d_activation_batchnorm",
    reference=reference,
    sizes={"small": dict(N=2, CI=16, CO=32, H=16, W=16, K=3),
           "full": dict(N=64, CI=64, CO=128, H=128, W=128, K=3)},
    inputs=lambda d: [
        uniform("x", (d.N, d.CI, d.H, d.W)),
        weight("weight", (d.CO, d.CI, d.K, d.K), fan_in=d.CI * d.K * d.K),
        normal("conv_bias", (d.CO,), scale=0.1),
        uniform("bn_weight", (d.CO,), 0.5, 1.5),
        normal("bn_bias", (d.CO,), scale=0.1),
    ],
    flops=lambda d: 2 * d.N * d.CO * (d.H - d.K + 1) * (d.W - d.K + 1) * d.CI * d.K * d.K,
    # The bf16 rounding of the conv output (|y| up to ~2, error up to 4e-3) divided by the
    # batch std (~0.3) and scaled by bn_weight (<= 1.5) still leaves the bf16 baseline at
    # up to ~2.5x the default 1e-2 tolerance.
    atol=3e-2,
    rtol=3e-2,
    meta=dict(source="KernelBench level 2 #52 (Conv2d_Activation_BatchNorm)", family="conv",
              level="kernelbench", kernelbench_id=52),
)
