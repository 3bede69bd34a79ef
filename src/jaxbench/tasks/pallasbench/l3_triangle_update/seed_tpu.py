"""Original TPU-style seed for l3_triangle_update: channel-major whole-array block.

z is transposed outside the kernel to channel-major (C, N, N) (a layout change, no
arithmetic) so that the per-channel products A_c A_c are one batched MXU matmul with
the batch dimension leading. One grid step holds z (32 x 64 x 64 float32 = 512 KiB),
the mask (16 KiB) and the output, double-buffered ~2 MiB, plus the masked copy and the
product (1 MiB): far under the 32 MiB scoped VMEM default. The result is transposed
back to (N, N, C) outside.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _tri_kernel(z_ref, m_ref, o_ref):
    z = z_ref[...]
    a = z * m_ref[...][None, :, :]
    u = jax.lax.dot_general(a, a, (((2,), (1,)), ((0,), (0,))),
                            preferred_element_type=jnp.float32)
    o_ref[...] = (z + u).astype(o_ref.dtype)


def kernel(z, m):
    n, _, c = z.shape
    bc = min(32, c)
    zt = jnp.transpose(z, (2, 0, 1))
    out = pl.pallas_call(
        _tri_kernel,
        out_shape=jax.ShapeDtypeStruct((c, n, n), z.dtype),
        grid=(c // bc,),
        in_specs=[pl.BlockSpec((bc, n, n), lambda i: (i, 0, 0)),
                  pl.BlockSpec((n, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bc, n, n), lambda i: (i, 0, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(zt, m)
    return jnp.transpose(out, (1, 2, 0))
