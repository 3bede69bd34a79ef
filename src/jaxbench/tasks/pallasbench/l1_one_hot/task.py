"""l1_one_hot (PallasBench #26): one-hot encoding as float32.

``out[i, c] = 1.0 if idx[i] == c else 0.0`` for c in [0, 1024).
idx (512,) int32 ~ U{0, ..., 1023}; output (512, 1024) float32.
"""

import jax
import jax.numpy as jnp

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, randint

NUM_CLASSES = 1024


def reference(idx):
    return jax.nn.one_hot(idx, NUM_CLASSES, dtype=jnp.float32)


TASK = Task(
    "l1_one_hot",
    reference=reference,
    # the class count is fixed by the operator (1024), so only the index count shrinks
    sizes={"small": dict(N=128), "full": dict(N=512)},
    inputs=lambda d: [randint("idx", (d.N,), 0, NUM_CLASSES, dtype="int32")],
    # one compare per output element
    flops=lambda d: d.N * NUM_CLASSES,
    suite=SUITE,
    meta=meta(26, 1, "indexing"),
)
