"""Bad kernel for 8p_gemm: the matmul runs in XLA; a Pallas kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    c = jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
    m, n = c.shape
    return pl.pallas_call(
        _copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype), grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, 128), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(c)
