"""Honest (8p_gemm): a kernel with a leftover XLA matmul whose result is never used."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _body(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    unused = jnp.dot(a, b)  # a debugging leftover: dead code, never computed
    del unused
    m, n = a.shape[0], b.shape[1]
    k = a.shape[1]
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(a, b)
