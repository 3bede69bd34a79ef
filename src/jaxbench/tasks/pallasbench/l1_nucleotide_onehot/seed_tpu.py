"""Original TPU-style seed for l1_nucleotide_onehot: (1024, 4) output blocks, one grid axis.

seq is viewed as (L, 1); both its (1024, 1) block and the (1024, 4) output block have a
last dim equal to the array's (as TPU blocks require). The kernel compares each symbol
with a lane iota of the 4 classes. VMEM: each block pads to 128 lanes (512 KiB), two
blocks double-buffered: 2 MiB. At the small size (512 symbols) the block is the whole array.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

NUM_CLASSES = 4


def _onehot_kernel(seq_ref, o_ref):
    classes = jax.lax.broadcasted_iota(jnp.int32, o_ref.shape, 1)
    o_ref[...] = (seq_ref[...] == classes).astype(o_ref.dtype)


def kernel(seq):
    (n,) = seq.shape
    br = min(1024, n)
    return pl.pallas_call(
        _onehot_kernel,
        out_shape=jax.ShapeDtypeStruct((n, NUM_CLASSES), jnp.float32),
        grid=(n // br,),
        in_specs=[pl.BlockSpec((br, 1), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((br, NUM_CLASSES), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(seq.reshape(n, 1))
