"""25k_conv3d_groupnorm_mean (KernelBench Level 2 #23): mean of GroupNorm(conv3d(x)).

x (N, CI, D, H, W) bf16 (NCDHW), U[lo, lo+1) with lo ~ U[-1, 1) per (sample, channel)
(repair, see REPAIR); weight (CO, CI, 3, 3, 3) bf16 (OIDHW); conv_bias,
gamma, beta (CO,). c = conv3d(x) + conv_bias (stride 1, VALID, f32 accumulation); GroupNorm
with G=8 groups over (channels of the group, D-2, H-2, W-2), biased variance, eps 1e-5,
statistics in float32, affine gamma/beta; then the mean over all axes but the batch.
Output (N,) bf16. Full size N=128, CI=3, CO=24, D=24, H=W=32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, custom, normal, weight


def reference(x, w, conv_bias, gamma, beta, groups=8):
    c = ops.conv(x, w) + conv_bias[:, None, None, None]
    y = ops.group_norm(c, groups, gamma, beta)
    return jnp.mean(y, axis=(1, 2, 3, 4))


REPAIR = ("x is drawn U[lo, lo + 1) with lo ~ U[-1, 1) per (sample, channel) instead of U[0, 1): "
          "with i.i.d. x the output is a mean over a large map, so it concentrates on a value "
          "fixed by the weights and x changed it by less than the tolerance")


def _inputs(d):
    return [
        custom("x", (d.N, d.CI, d.D, d.H, d.W), dtype="bfloat16"),
        weight("weight", (d.CO, d.CI, d.K, d.K, d.K), fan_in=d.CI * d.K ** 3),
        normal("conv_bias", (d.CO,), scale=0.1),
        # Only gamma's deviation within a group carries x into the output (the normalised
        # deviations sum to zero per group), so gamma is spread wide.
        normal("gamma", (d.CO,), scale=1.0),
        normal("beta", (d.CO,), scale=0.1),
    ]


def make_inputs(key, d):
    """x per the repair; the other inputs are independent draws of their specs."""
    specs = _inputs(d)
    keys = jax.random.split(key, len(specs) + 1)
    u = jax.random.uniform(keys[0], specs[0].shape, jnp.float32)
    lo = jax.random.uniform(keys[-1], (d.N, d.CI, 1, 1, 1), jnp.float32, -1.0, 1.0)
    x = (u + lo).astype(jnp.bfloat16)
    return (x, *(spec.draw(k) for spec, k in zip(specs[1:], keys[1:-1], strict=True)))


TASK = Task(
    "25k_conv3d_groupnorm_mean",
    reference=reference,
    sizes={"small": dict(N=2, CI=3, CO=24, G=8, D=8, H=16, W=16, K=3),
           "full": dict(N=128, CI=3, CO=24, G=8, D=24, H=32, W=32, K=3)},
    inputs=_inputs,
    make_inputs=make_inputs,
    flops=lambda d: (2 * d.N * d.CO * (d.D - d.K + 1) * (d.H - d.K + 1) * (d.W - d.K + 1)
                     * d.CI * d.K ** 3),
    # The output is a mean of ~10^4-10^5 normalised values; its spread over samples is
    # ~0.05, so the default atol 1e-2 would be too blunt. The bf16 baseline errs by ~1e-4.
    atol=2e-3,
    rtol=1e-2,
    meta=dict(source="KernelBench level 2 #23 (Conv3d_GroupNorm_Mean)", family="conv",
              level="kernelbench", repair=REPAIR, kernelbench_id=23),
)
