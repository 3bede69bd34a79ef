"""Original TPU-style seed for l1_outer_product: (512, N) output row blocks.

x is viewed as an (M, 1) column and y as a (1, N) row (free reshapes outside the kernel),
so every block obeys the (8, 128) rule: (512, 1) column blocks (last dim = the array's 1),
the whole (1, N) row, and (512, N) output blocks; the kernel broadcasts the product. VMEM
at full size: the 2 MiB output block double-buffered (4 MiB) plus the lane-padded column
((512, 128) words, 256 KiB) and the row: about 4.5 MiB.
"""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _outer_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] * y_ref[...]


def kernel(x, y):
    m, n = x.shape[0], y.shape[0]
    bm = min(512, m)
    return pl.pallas_call(
        _outer_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm,),
        in_specs=[pl.BlockSpec((bm, 1), lambda i: (i, 0)),
                  pl.BlockSpec((1, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x.reshape(m, 1), y.reshape(1, n))
