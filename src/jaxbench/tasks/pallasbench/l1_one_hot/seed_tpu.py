"""Original TPU-style seed for l1_one_hot: (256, 1024) output blocks, one grid axis.

idx is viewed as (N, 1) so its (256, 1) block has a last dim equal to the array's (as TPU
blocks require); the kernel compares it against a lane iota of the 1024 classes. VMEM: the
(256, 1024) float32 output block (1 MiB) and the index block (padded to 128 lanes:
128 KiB), double-buffered: ~2.3 MiB. At the small size (128 indices) the block is the
whole array.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

NUM_CLASSES = 1024


def _one_hot_kernel(idx_ref, o_ref):
    classes = jax.lax.broadcasted_iota(jnp.int32, o_ref.shape, 1)
    o_ref[...] = (idx_ref[...] == classes).astype(o_ref.dtype)


def kernel(idx):
    (n,) = idx.shape
    br = min(256, n)
    return pl.pallas_call(
        _one_hot_kernel,
        out_shape=jax.ShapeDtypeStruct((n, NUM_CLASSES), jnp.float32),
        grid=(n // br,),
        in_specs=[pl.BlockSpec((br, 1), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((br, NUM_CLASSES), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(idx.reshape(n, 1))
