"""32k_gemm_sigmoid_logsumexp (KernelBench level 2 #45, Gemm_Sigmoid_LogSumExp).

``h = sigmoid(x @ w1^T + b1); z = h @ w2^T + b2; out = logsumexp(z, axis=1)``.

Inputs x (M, K), w1 (H, K), b1 (H,), w2 (O, H), b2 (O,) (PyTorch ``nn.Linear``
layouts, out x in), all bf16; output (M,) bf16. Both GEMMs accumulate in float32 and
are rounded to bf16 (h is a bf16 activation); the logsumexp runs in float32. Full size
M = 16384, K = 2048, H = 4096, O = 1024. w2 is drawn with standard deviation 8/sqrt(H)
(not 1/sqrt(H)) and b1, b2 from N(0, 1), so that the output is not nearly the same
constant for every row.
"""

import math

import jax
import jax.numpy as jnp

from jaxbench.tasks import ops
from jaxbench.tasks.spec import Task, normal, weight

# w2 is drawn from N(0, W2_SCALE^2 / H) rather than N(0, 1 / H), and the biases from N(0, 1):
# with unit-variance logits the logsumexp over O outputs is log(O) + 0.15 +- 0.02 for every
# row (a constant would pass the tolerance) and b1, b2 barely move it. Wider logits make the
# output depend visibly on each row and on every input.
W2_SCALE = 8.0


def reference(x, w1, b1, w2, b2):
    h = jax.nn.sigmoid(ops.linear(x, w1, b1, transpose_w=True))
    z = ops.linear(h, w2, b2, transpose_w=True)
    return jax.nn.logsumexp(z.astype(jnp.float32), axis=1).astype(x.dtype)


TASK = Task(
    "32k_gemm_sigmoid_logsumexp",
    reference=reference,
    sizes={"small": dict(M=256, K=256, H=512, O=256),
           "full": dict(M=16384, K=2048, H=4096, O=1024)},
    inputs=lambda d: [normal("x", (d.M, d.K)), weight("w1", (d.H, d.K), fan_in=d.K),
                      normal("b1", (d.H,)), normal("w2", (d.O, d.H), scale=W2_SCALE / math.sqrt(d.H)),
                      normal("b2", (d.O,))],
    flops=lambda d: 2 * d.M * d.K * d.H + 2 * d.M * d.H * d.O,
    meta=dict(source="KernelBench level 2 #45 Gemm_Sigmoid_LogSumExp", family="gemm_reduction",
              level="kernelbench", kernelbench_id=45),
)
