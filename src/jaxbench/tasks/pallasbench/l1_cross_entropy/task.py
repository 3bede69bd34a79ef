"""l1_cross_entropy (PallasBench #22): soft-label cross-entropy per row.

``loss[i] = -sum_j L[i, j] * log_softmax(Z)[i, j]``, the log-softmax over each row of Z.
Z (1024, 512) float32 ~ N(0, 1) (logits); L (1024, 512) float32, each row a probability
distribution: ``L = softmax(2 * N(0, 1))`` per row (positive, rows sum to 1, mildly
peaked). Output (1024,) float32, one loss per row (about log(512) ~ 6.2).

Repair: the published task drew L ~ N(0, 1), which is not a label distribution (negative
"probabilities", rows not summing to 1, so the "loss" was unbounded in sign). L is now
drawn as a probability distribution per row; the formula is unchanged.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, custom, normal


def reference(z, labels):
    return -jnp.sum(labels * jax.nn.log_softmax(z, axis=-1), axis=-1)


def make_inputs(key, d):
    kz, kl = jax.random.split(key)
    z = jax.random.normal(kz, (d.M, d.N), jnp.float32)
    # temperature 1/2: the rows are distributions that weight some classes clearly more
    # than others (a flat softmax of N(0, 1) would make the loss nearly independent of L)
    labels = jax.nn.softmax(2.0 * jax.random.normal(kl, (d.M, d.N), jnp.float32), axis=-1)
    return z, labels


TASK = Task(
    "l1_cross_entropy",
    reference=reference,
    sizes={"small": dict(M=128, N=512), "full": dict(M=1024, N=512)},
    inputs=lambda d: [normal("Z", (d.M, d.N), dtype="float32"),
                      custom("L", (d.M, d.N), dtype="float32")],
    make_inputs=make_inputs,
    # log-softmax (max, subtract, exp, sum, log, subtract: ~5) + multiply and sum (2)
    flops=lambda d: 7 * d.M * d.N,
    suite=SUITE,
    meta=meta(22, 1, "loss",
              repair="labels were drawn N(0, 1), not a distribution; L is now a per-row "
                     "probability distribution (softmax of 2 * N(0, 1)); math unchanged"),
)
