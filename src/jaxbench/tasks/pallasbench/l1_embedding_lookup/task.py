"""l1_embedding_lookup (PallasBench #25): gather rows of an embedding table.

``out[i, :] = T[idx[i], :]``.
T (32000, 768) float32 ~ N(0, 1); idx (512,) int32 ~ U{0, ..., 31999}; output (512, 768)
float32.

Repair: the published task drew idx in [0, 512), so only the first 512 of the 32,000
rows could ever be read (a kernel could have copied the first rows of the table); idx is
now drawn over the whole table, [0, 32000). The formula is unchanged.
"""

from jaxbench.tasks.pallasbench import SUITE, meta
from jaxbench.tasks.spec import Task, normal, randint


def reference(table, idx):
    return table[idx]


TASK = Task(
    "l1_embedding_lookup",
    reference=reference,
    # small: a 600-row table (not a power of two, like 32000) with 384 = 3 x 128 columns
    # (like 768 = 3 x 256)
    sizes={"small": dict(V=600, D=384, N=64), "full": dict(V=32000, D=768, N=512)},
    inputs=lambda d: [normal("T", (d.V, d.D), dtype="float32"),
                      randint("idx", (d.N,), 0, d.V, dtype="int32")],
    # a pure copy: no arithmetic; counted as one op per gathered element
    flops=lambda d: d.N * d.D,
    # traffic: the gathered rows read, the output written, the indices
    bytes=lambda d: 2 * d.N * d.D * 4 + d.N * 4,
    suite=SUITE,
    # data movement: XLA's optimised reference is one gather (192 FLOPs at small size, for
    # 197 kB moved), so a copy kernel fed by an XLA gather is judged on bytes
    work="bytes",
    meta=meta(25, 1, "indexing",
              repair="idx was drawn in [0, 512) of a 32000-row table; it is now drawn over "
                     "the whole table, [0, 32000); math unchanged"),
)
