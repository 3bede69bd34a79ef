"""Original TPU-style seed for l1_cosine_sim: (256, full row) blocks, one grid axis.

Each step loads 256 whole rows of x and z (256 x 1024 float32 = 1 MiB each), reduces
x.z, x.x and z.z per row and writes 256 similarities. They go to a (M, 1) array in
(256, 1) blocks (a last dim equal to the array's, as TPU blocks require), reshaped to (M,)
outside. VMEM: 2 inputs x 2 buffers x 1 MiB + the small output: ~4.3 MiB. At the small
size (128, 1024) the block is the whole array.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _cosine_kernel(x_ref, z_ref, o_ref):
    x, z = x_ref[...], z_ref[...]
    dot = jnp.sum(x * z, axis=-1, keepdims=True)
    nx = jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))
    nz = jnp.sqrt(jnp.sum(z * z, axis=-1, keepdims=True))
    o_ref[...] = dot / (nx * nz + 1e-8)


def kernel(x, z):
    m, n = x.shape
    br = min(256, m)
    out = pl.pallas_call(
        _cosine_kernel,
        out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype),
        grid=(m // br,),
        in_specs=[pl.BlockSpec((br, n), lambda i: (i, 0)),
                  pl.BlockSpec((br, n), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((br, 1), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, z)
    return out.reshape(m)
