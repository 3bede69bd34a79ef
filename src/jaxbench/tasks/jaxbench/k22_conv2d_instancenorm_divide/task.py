"""22k_conv2d_instancenorm_divide (KernelBench Level 2 #17): ``IN(conv2d(x) + conv_bias) / 2``.

x (N, CI, H, W) ~ U[0, 1) bf16 (NCHW); weight (CO, CI, 3, 3) bf16 (OIHW); conv_bias,
in_weight, in_bias (CO,). c = conv(x) + conv_bias (stride 1, VALID, f32 accumulation);
InstanceNorm normalises each (sample, channel) plane over its (H-2)·(W-2) positions (biased
variance, eps 1e-5, statistics in float32), then the affine in_weight·ĉ + in_bias, then /2.
conv_bias is a per-channel constant, so the norm cancels it exactly (as in the original).
Output (N, CO, H - 2, W - 2) bf16. Full size N=128, CI=64, CO=128, H=W=128.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, conv_bias, in_weight, in_bias):
    c = ops.conv(x, w) + conv_bias[:, None, None]
    # Instance norm is group norm with one channel per group.
    y = ops.group_norm(c, c.shape[1], in_weight, in_bias)
    return y / 2


TASK = Task(
    "22k_conv2d_instancenorm_divide",
    reference=reference,
    sizes={"small": dict(N=2, CI=16, CO=32, H=16, W=16, K=3),
           "full": dict(N=128, CI=64, CO=128, H=128, W=128, K=3)},
    inputs=lambda d: [
        uniform("x", (d.N, d.CI, d.H, d.W)),
        weight("weight", (d.CO, d.CI, d.K, d.K), fan_in=d.CI * d.K * d.K),
        normal("conv_bias", (d.CO,), scale=0.1),
        uniform("in_weight", (d.CO,), 0.5, 1.5),
        normal("in_bias", (d.CO,), scale=0.1),
    ],
    flops=lambda d: 2 * d.N * d.CO * (d.H - d.K + 1) * (d.W - d.K + 1) * d.CI * d.K * d.K,
    # The bf16 baseline rounds the conv output (|c| up to ~2, error up to 4e-3) before the
    # norm divides by the plane's std (~0.3); it reaches ~1.1x the default 1e-2 tolerance.
    atol=2e-2,
    rtol=2e-2,
    meta=dict(source="KernelBench level 2 #17 (Conv2d_InstanceNorm_Divide)", family="conv",
              level="kernelbench",
              note="conv_bias cancels exactly under the norm, as in the original (the validator "
                   "flags it under inputs_matter)",
              kernelbench_id=17),
)
