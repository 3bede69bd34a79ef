"""22k_conv2d_instancenorm_divide (KernelBench Level 2 #17), repaired.

Repaired computation (what this task measures)::

    c   = conv2d(x, weight)                                   # stride 1, VALID, f32 accumulation
    n   = (c - mean_hw c) * rsqrt(var_hw c + 1e-5)            # instance norm per (sample, channel)
    out = (n * in_weight + in_bias + conv_bias) / 2           # affine, conv_bias per channel, /2

x (N, CI, H, W) ~ U[0, 1) bf16 (NCHW); weight (CO, CI, 3, 3) bf16 (OIHW); conv_bias,
in_weight, in_bias (CO,) bf16. The conv output is rounded to bf16; the InstanceNorm statistics
run over each (sample, channel) plane's (H-2)·(W-2) positions in float32 (biased variance).
Output (N, CO, H - 2, W - 2) bf16. Full size N=128, CI=64, CO=128, H=W=128.

Degeneracy and repair: the original adds conv_bias to the conv output *before* the instance
norm; it is a per-channel constant over each normalised plane, so the norm subtracts it
exactly and conv_bias has no effect (see ``unrepaired_reference``). The smallest repair that
keeps the op sequence and the input list moves the conv bias past the norm: it is added per
channel after the affine, before the division, so every input matters.
"""

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, conv_bias, in_weight, in_bias):
    c = ops.conv(x, w)
    # Instance norm is group norm with one channel per group.
    y = ops.group_norm(c, c.shape[1], in_weight, in_bias)
    return (y + conv_bias[:, None, None]) / 2


def unrepaired_reference(x, w, conv_bias, in_weight, in_bias):
    """The degenerate original: conv_bias before the instance norm, which cancels it."""
    c = ops.conv(x, w) + conv_bias[:, None, None]
    return ops.group_norm(c, c.shape[1], in_weight, in_bias) / 2


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
              repair="conv_bias moved from before the instance norm (where the per-plane mean "
                     "subtraction cancels it exactly) to after the norm's affine, per channel, "
                     "before the /2: out = (IN(conv(x))*in_weight + in_bias + conv_bias) / 2",
              kernelbench_id=17),
)
