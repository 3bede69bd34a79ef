"""39k_conv2d_gelu_globalavgpool (KernelBench Level 2 #67): ``mean_{H,W} gelu(conv2d(x) + b)``.

x (N, CI, H, W) bf16 (NCHW), U[lo, lo+1) with lo ~ U[-1, 1) per (sample, channel)
(repair, see REPAIR); weight (CO, CI, 3, 3) bf16 (OIHW); bias (CO,). Stride 1, VALID
padding, f32 accumulation; exact (erf) GELU; global average pool over the (H-2)·(W-2)
positions, squeezed. Output (N, CO) bf16. Full size N=128, CI=8, CO=64, H=W=256.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, custom, normal, weight


def reference(x, w, bias):
    y = ops.gelu(ops.conv(x, w) + bias[:, None, None])
    return jnp.mean(y, axis=(2, 3))


REPAIR = ("x is drawn U[lo, lo + 1) with lo ~ U[-1, 1) per (sample, channel) instead of U[0, 1): "
          "with i.i.d. x the output is a mean over a large map, so it concentrates on a value "
          "fixed by the weights and x changed it by less than the tolerance")


def _inputs(d):
    return [
        custom("x", (d.N, d.CI, d.H, d.W), dtype="bfloat16"),
        weight("weight", (d.CO, d.CI, d.K, d.K), fan_in=d.CI * d.K * d.K),
        normal("bias", (d.CO,), scale=0.1),
    ]


def make_inputs(key, d):
    """x per the repair; the other inputs are independent draws of their specs."""
    specs = _inputs(d)
    keys = jax.random.split(key, len(specs) + 1)
    u = jax.random.uniform(keys[0], specs[0].shape, jnp.float32)
    lo = jax.random.uniform(keys[-1], (d.N, d.CI, 1, 1), jnp.float32, -1.0, 1.0)
    x = (u + lo).astype(jnp.bfloat16)
    return (x, *(spec.draw(k) for spec, k in zip(specs[1:], keys[1:-1], strict=True)))


TASK = Task(
    "39k_conv2d_gelu_globalavgpool",
    reference=reference,
    sizes={"small": dict(N=2, CI=8, CO=16, H=32, W=32, K=3),
           "full": dict(N=128, CI=8, CO=64, H=256, W=256, K=3)},
    inputs=_inputs,
    make_inputs=make_inputs,
    flops=lambda d: 2 * d.N * d.CO * (d.H - d.K + 1) * (d.W - d.K + 1) * d.CI * d.K * d.K,
    meta=dict(source="KernelBench level 2 #67 (Conv2d_GELU_GlobalAvgPool)", family="conv",
              level="kernelbench", repair=REPAIR, kernelbench_id=67),
)
