"""46k_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp (KernelBench Level 2 #92).

x (N, CI, H, W) ~ U[0, 1) bf16 (NCHW); weight (CO, CI, 3, 3) bf16 (OIHW); conv_bias,
gn_weight, gn_bias (CO,). c = conv(x) + conv_bias (stride 1, VALID, f32 accumulation); t =
tanh(GroupNorm_16(c)) (16 groups, biased variance, eps 1e-5, float32 statistics, affine); h
= hardswish(t); out = logsumexp(c + h) over the channel axis, keepdims. Output (N, 1, H - 2,
W - 2) bf16. Full size N=128, CI=8, CO=64, H=W=128.
"""

import jax

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, conv_bias, gn_weight, gn_bias, groups=16):
    c = ops.conv(x, w) + conv_bias[:, None, None]
    t = jax.numpy.tanh(ops.group_norm(c, groups, gn_weight, gn_bias))
    return jax.nn.logsumexp(c + ops.hardswish(t), axis=1, keepdims=True)


TASK = Task(
    "46k_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp",
    reference=reference,
    sizes={"small": dict(N=2, CI=8, CO=32, G=16, H=16, W=16, K=3),
           "full": dict(N=128, CI=8, CO=64, G=16, H=128, W=128, K=3)},
    inputs=lambda d: [
        uniform("x", (d.N, d.CI, d.H, d.W)),
        weight("weight", (d.CO, d.CI, d.K, d.K), fan_in=d.CI * d.K * d.K),
        normal("conv_bias", (d.CO,), scale=0.1),
        uniform("gn_weight", (d.CO,), 0.5, 1.5),
        normal("gn_bias", (d.CO,), scale=1.0),
    ],
    flops=lambda d: 2 * d.N * d.CO * (d.H - d.K + 1) * (d.W - d.K + 1) * d.CI * d.K * d.K,
    meta=dict(source="KernelBench level 2 #92 (Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_"
                     "LogSumExp)", family="conv", level="kernelbench", kernelbench_id=92),
)
