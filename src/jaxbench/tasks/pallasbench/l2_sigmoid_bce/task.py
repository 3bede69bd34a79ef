"""l2_sigmoid_bce (PallasBench #38): elementwise binary cross-entropy with logits.

``loss = (1 - t) * z + softplus(-z)``, which equals
``-(t * log(sigmoid(z)) + (1 - t) * log(1 - sigmoid(z)))`` but never takes the log of a
rounded-to-0 or -1 sigmoid (softplus(-z) = max(-z, 0) + log1p(exp(-|z|))).
z (2048, 1024) float32 logits ~ N(0, 1); t (2048, 1024) float32 soft targets ~ U[0, 1);
output the per-element loss (2048, 1024) float32 (no reduction).

Repaired: the published version computed a formula that was not binary cross-entropy,
with targets drawn from N(0, 1) (not probabilities). Its exact formula is not reproduced
here, so no ``unrepaired_reference`` is given; ``meta["repair"]`` records the change.
"""

import jax

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, uniform


def reference(z, t):
    return (1 - t) * z + jax.nn.softplus(-z)


TASK = Task(
    "l2_sigmoid_bce",
    reference=reference,
    sizes={"small": dict(M=256, N=512), "full": dict(M=2048, N=1024)},
    inputs=lambda d: [normal("z", (d.M, d.N), dtype="float32"),
                      uniform("t", (d.M, d.N), 0.0, 1.0, dtype="float32")],
    # 1 - t, product, |z|, exp, log1p, max, adds: ~8 flops per element
    flops=lambda d: 8 * d.M * d.N,
    suite=SUITE,
    meta=meta(38, 2, "loss",
              repair="The published formula was not binary cross-entropy and its targets were "
                     "N(0, 1); it is now the stable BCE-with-logits (1 - t) z + softplus(-z) "
                     "per element, with targets t ~ U[0, 1)."),
)
