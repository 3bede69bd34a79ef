"""33k_conv3d_mish_tanh (KernelBench Level 2 #47): ``tanh(mish(conv3d(x) + bias))``.

x (N, CI, D, H, W) ~ U[0, 1) bf16 (NCDHW); weight (CO, CI, 3, 3, 3) bf16 (OIDHW); bias (CO,).
Stride 1, VALID padding, f32 accumulation; mish(y) = y·tanh(softplus(y)).
Output (N, CO, D - 2, H - 2, W - 2) bf16. Full size N=16, CI=32, CO=64, D=32, H=W=64.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, bias):
    y = ops.conv(x, w) + bias[:, None, None, None]
    return jnp.tanh(ops.mish(y))


TASK = Task(
    "33k_conv3d_mish_tanh",
    reference=reference,
    sizes={"small": dict(N=2, CI=16, CO=16, D=6, H=16, W=16, K=3),
           "full": dict(N=16, CI=32, CO=64, D=32, H=64, W=64, K=3)},
    inputs=lambda d: [
        uniform("x", (d.N, d.CI, d.D, d.H, d.W)),
        weight("weight", (d.CO, d.CI, d.K, d.K, d.K), fan_in=d.CI * d.K ** 3),
        normal("bias", (d.CO,), scale=0.1),
    ],
    flops=lambda d: (2 * d.N * d.CO * (d.D - d.K + 1) * (d.H - d.K + 1) * (d.W - d.K + 1)
                     * d.CI * d.K ** 3),
    meta=dict(source="KernelBench level 2 #47 (Conv3d_Mish_Tanh)", family="conv",
              level="kernelbench", kernelbench_id=47),
)
