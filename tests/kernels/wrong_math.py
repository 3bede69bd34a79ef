"""Bad kernel for 8p_gemm: a real tiled Pallas matmul that drops the last K block."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    k = a_ref.shape[1]
    half = k - 128
    o_ref[...] = jnp.dot(a_ref[:, :half], b_ref[:half, :],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(a, b)
