"""18k_conv2d_relu_biasadd (KernelBench Level 2 #1): ``relu(conv2d(x) + conv_bias) + bias``.

x (N, CI, H, W) ~ U[0, 1) bf16 (NCHW); weight (CO, CI, 3, 3) bf16 (OIHW); conv_bias (CO,);
bias (CO, 1, 1). The convolution has stride 1 and VALID padding, accumulated in float32.
Output (N, CO, H - 2, W - 2) bf16. Full size N=128, CI=64, CO=128, H=W=128.
"""

import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, uniform, weight


def reference(x, w, conv_bias, bias):
    y = ops.conv(x, w) + conv_bias[:, None, None]
    return jnp.maximum(y, 0) + bias


TASK = Task(
    "18k_conv2d_relu_biasadd",
    reference=reference,
    sizes={"small": dict(N=2, CI=16, CO=32, H=16, W=16, K=3),
           "full": dict(N=128, CI=64, CO=128, H=128, W=128, K=3)},
    inputs=lambda d: [
        uniform("x", (d.N, d.CI, d.H, d.W)),
        weight("weight", (d.CO, d.CI, d.K, d.K), fan_in=d.CI * d.K * d.K),
        normal("conv_bias", (d.CO,), scale=0.1),
        normal("bias", (d.CO, 1, 1), scale=0.1),
    ],
    flops=lambda d: 2 * d.N * d.CO * (d.H - d.K + 1) * (d.W - d.K + 1) * d.CI * d.K * d.K,
    meta=dict(source="KernelBench level 2 #1 (Conv2d_ReLU_BiasAdd)", family="conv",
              level="kernelbench", kernelbench_id=1),
)
