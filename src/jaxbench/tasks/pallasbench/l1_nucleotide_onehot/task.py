"""l1_nucleotide_onehot (PallasBench #27): one-hot encoding of a DNA sequence as float32.

``out[i, c] = 1.0 if seq[i] == c else 0.0`` for the 4 nucleotide classes c in [0, 4).
seq (4096,) int32 ~ U{0, 1, 2, 3}; output (4096, 4) float32.

Repair: the published task drew seq in [0, 4096), so 99.9 % of the symbols were outside
the 4 classes and their rows all zero (a kernel writing zeros almost passed); seq is now
drawn in [0, 4), the nucleotide alphabet. The formula is unchanged.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, randint

NUM_CLASSES = 4


def reference(seq):
    return jax.nn.one_hot(seq, NUM_CLASSES, dtype=jnp.float32)


TASK = Task(
    "l1_nucleotide_onehot",
    reference=reference,
    sizes={"small": dict(L=512), "full": dict(L=4096)},
    inputs=lambda d: [randint("seq", (d.L,), 0, NUM_CLASSES, dtype="int32")],
    # one compare per output element
    flops=lambda d: d.L * NUM_CLASSES,
    suite=SUITE,
    meta=meta(27, 1, "indexing",
              repair="seq was drawn in [0, 4096), leaving 99.9 % of the one-hot rows zero; "
                     "it is now drawn in [0, 4); math unchanged"),
)
