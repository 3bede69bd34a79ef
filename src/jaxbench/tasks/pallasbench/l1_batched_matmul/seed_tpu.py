"""Original TPU-style seed for l1_batched_matmul: one whole (M, K) @ (K, N) product per step.

Grid (B,): each step takes batch b's full X_b and Y_b (the batch dimension squeezed out of
the block) and does one MXU matmul with float32 accumulation. The last two block dims equal
the array dims, so the (8, 128) rule holds. VMEM at full size: three 256 KiB blocks,
double-buffered: 1.5 MiB.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _bmm_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = jnp.dot(x_ref[...], y_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(x, y):
    b, m, k = x.shape
    n = y.shape[2]
    return pl.pallas_call(
        _bmm_kernel,
        out_shape=jax.ShapeDtypeStruct((b, m, n), x.dtype),
        grid=(b,),
        in_specs=[pl.BlockSpec((pl.Squeezed(), m, k), lambda i: (i, 0, 0)),
                  pl.BlockSpec((pl.Squeezed(), k, n), lambda i: (i, 0, 0))],
        out_specs=pl.BlockSpec((pl.Squeezed(), m, n), lambda i: (i, 0, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x, y)
