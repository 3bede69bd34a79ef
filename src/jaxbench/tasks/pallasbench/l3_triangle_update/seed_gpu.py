"""GPU seed for l3_triangle_update (Pallas Triton backend): one program per channel.

Grid (C,) = 32 programs at full size. The channel axis is squeezed out of the z and
output blocks (block (N, N, None)), so each program reads its (64, 64) channel slice of
z in place (a strided load: no transpose outside the kernel), forms A = z_c ⊙ m, computes
A A as one 64 x 64 x 64 float32 dot and stores z_c + A A into its channel of the output.
Each output channel has exactly one writer.

Every tensor has 64 x 64 = 4,096 elements (a power of two, far under 2^20); N is 64 at
both sizes, so no masks are needed.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _tri_kernel(z_ref, m_ref, o_ref):
    z = z_ref[...]
    a = z * m_ref[...]
    o_ref[...] = (z + jnp.dot(a, a, preferred_element_type=jnp.float32)).astype(o_ref.dtype)


def kernel(z, m):
    n, _, c = z.shape
    return pl.pallas_call(
        _tri_kernel,
        out_shape=jax.ShapeDtypeStruct(z.shape, z.dtype),
        grid=(c,),
        in_specs=[pl.BlockSpec((n, n, None), lambda ci: (0, 0, ci)),
                  pl.BlockSpec((n, n), lambda ci: (0, 0))],
        out_specs=pl.BlockSpec((n, n, None), lambda ci: (0, 0, ci)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(z, m)
