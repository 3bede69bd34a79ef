"""GPU seed for l1_outer_product (Pallas Triton backend): (64, 256) output tiles.

Grid (M/bm, N/bn): each program loads a (64,) slice of x and a (256,) slice of y (1-D
blocks, powers of two), broadcasts them to (64, 1) x (1, 256) and stores the (64, 256)
tile (16,384 elements, far under 2^20). 64 and 256 divide the full and small sizes, so no
edge masks are needed.
"""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _outer_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...][:, None] * y_ref[...][None, :]


def kernel(x, y):
    m, n = x.shape[0], y.shape[0]
    bm, bn = min(64, m), min(256, n)
    return pl.pallas_call(
        _outer_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm,), lambda i, j: (i,)),
                  pl.BlockSpec((bn,), lambda i, j: (j,))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(x, y)
