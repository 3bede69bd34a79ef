"""Original TPU-style seed for l1_embedding_lookup: scalar-prefetched indices, row gather.

idx is a scalar-prefetch operand (``pltpu.PrefetchScalarGridSpec``): it sits in SMEM
before the grid runs, so BlockSpec index maps can read it. Each grid step gathers 8 rows:
8 table operands (the same table, viewed as (V, 1, D)), the r-th with a (squeezed, 1, D)
block at row ``idx[8 i + r]``, so the pipeline DMAs exactly the 8 wanted rows into VMEM;
the kernel stacks them into an (8, D) output block. The (V, 1, D) view makes each block's
last two dims (1, D) equal to the array's, as TPU blocks require. VMEM: 8 row blocks
(padded to 8 sublanes: 24 KiB each) + the (8, 768) output, double-buffered: ~0.5 MiB.
512 indices make 64 grid steps.
"""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

ROWS = 8


def _gather_kernel(idx_ref, *refs):
    del idx_ref  # consumed by the index maps
    *row_refs, o_ref = refs
    for r, row_ref in enumerate(row_refs):
        o_ref[pl.ds(r, 1), :] = row_ref[...]


def _row_map(r):
    return lambda i, idx_ref: (idx_ref[i * ROWS + r], 0, 0)


def kernel(table, idx):
    v, d = table.shape
    (n,) = idx.shape
    rows = min(ROWS, n)
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(n // rows,),
        in_specs=[pl.BlockSpec((pl.Squeezed(), 1, d), _row_map(r)) for r in range(rows)],
        out_specs=pl.BlockSpec((rows, d), lambda i, idx_ref: (i, 0)),
    )
    table3 = table.reshape(v, 1, d)
    return pl.pallas_call(
        _gather_kernel,
        out_shape=jax.ShapeDtypeStruct((n, d), table.dtype),
        grid_spec=grid_spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(idx, *([table3] * rows))
