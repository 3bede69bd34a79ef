"""l2_pwm_scan (PallasBench #39): position-weight-matrix scan (a valid 1-D correlation).

``s[p] = sum_{k < W} sum_c S[p + k, c] * P[c, k]`` for ``p = 0 ... L - W``: the score of
every length-W window of a C-channel sequence against a PWM.
S (1024, 4) float32 ~ N(0, 1) (sequence, channels last); P (4, 12) float32 ~ N(0, 1)
(channels x window); output (L - W + 1,) = (1013,) float32 (not a power of two).
"""

import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal


def reference(s, p):
    length, w = s.shape[0], p.shape[1]
    n = length - w + 1
    out = jnp.zeros((n,), s.dtype)
    for k in range(w):
        out = out + jnp.sum(s[k:k + n, :] * p[:, k], axis=-1)
    return out


TASK = Task(
    "l2_pwm_scan",
    reference=reference,
    sizes={"small": dict(L=512, C=4, W=12), "full": dict(L=1024, C=4, W=12)},
    inputs=lambda d: [normal("S", (d.L, d.C), dtype="float32"),
                      normal("P", (d.C, d.W), dtype="float32")],
    flops=lambda d: 2 * (d.L - d.W + 1) * d.W * d.C,
    suite=SUITE,
    meta=meta(39, 2, "scan"),
)
