"""GPU seed for l1_sigmoid (Pallas Triton backend): (64, 256) tiles over a 2-D grid.

Each tile is 16,384 float32 elements (a power of two, far under Triton's 2^20 limit), and
every intermediate has the tile's shape. 64 and 256 divide 4096 and the small size (256,
512) exactly, so no edge masking is needed. exp lowers to libdevice expf; exp(-x) = inf
for very negative x gives 1 / inf = 0, the limit.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _sigmoid_kernel(x_ref, o_ref):
    x = x_ref[...]
    o_ref[...] = 1.0 / (1.0 + jnp.exp(-x))


def kernel(x):
    m, n = x.shape
    bm, bn = min(64, m), min(256, n)
    return pl.pallas_call(
        _sigmoid_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(m, bm), pl.cdiv(n, bn)),
        in_specs=[pl.BlockSpec((bm, bn), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(x)
