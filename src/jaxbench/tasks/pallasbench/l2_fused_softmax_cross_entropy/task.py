"""l2_fused_softmax_cross_entropy (PallasBench #37): mean sparse softmax cross-entropy.

``loss = mean_i (logsumexp_j Z[i, j] - Z[i, labels[i]])``: the fused log-softmax plus
negative log-likelihood of integer class labels, averaged over rows.
Z (1024, 512) float32 logits ~ N(0, 1); labels (1024,) int32 ~ uniform in [0, 512);
output a float32 scalar (~ log 512 + 0.5 = 6.7). Tolerance atol = rtol = 1e-4 (see below).

Repaired: the published version was an exact duplicate of #22 (per-row
``-sum_j L[i, j] * log_softmax(Z)[i, j]`` with a dense (1024, 512) float32 target matrix
L, one loss per row). This version is the fused *sparse* form (integer labels, scalar mean
loss), which exercises a gather of the label logit and a full reduction instead.
``unrepaired_reference`` keeps the published dense per-row formula (signature (Z, L)).
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, randint


def reference(z, labels):
    lse = jax.nn.logsumexp(z, axis=-1)
    picked = jnp.take_along_axis(z, labels[:, None], axis=-1)[:, 0]
    return jnp.mean(lse - picked)


def unrepaired_reference(z, targets):
    """The published (#22 duplicate) formula: per-row dense cross-entropy, shape (rows,)."""
    return -jnp.sum(targets * jax.nn.log_softmax(z, axis=-1), axis=-1)


TASK = Task(
    "l2_fused_softmax_cross_entropy",
    reference=reference,
    sizes={"small": dict(N=512, C=512), "full": dict(N=1024, C=512)},
    inputs=lambda d: [normal("Z", (d.N, d.C), dtype="float32"),
                      randint("labels", (d.N,), 0, d.C, dtype="int32")],
    # max, subtract, exp, sum per logit (~4), plus the log, pick and mean per row
    flops=lambda d: 4 * d.N * d.C + 3 * d.N,
    # A mean over rows hides the labels: with random labels the mean picked logit moves by only
    # ~1/sqrt(N) (0.03-0.05), inside the default 1e-2 + 1e-2 * 6.7 = 0.08, so a kernel that
    # ignored the labels would pass. A float32 kernel is ~1e-6 off; 1e-4 keeps labels decisive.
    atol=1e-4,
    rtol=1e-4,
    suite=SUITE,
    meta=meta(37, 2, "loss",
              repair="The published task duplicated #22 (dense-target per-row cross-entropy); "
                     "it is now the fused sparse form (int32 class labels, scalar mean loss)."),
    unrepaired_reference=unrepaired_reference,
)
