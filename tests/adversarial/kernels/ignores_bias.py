"""Cheat (19k_matmul_subtract_multiply_relu): a real Pallas matmul + epilogue that skips the
bias input (one input fewer to read). The parent's f32 ground truth catches it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(x_ref, w_ref, o_ref):
    y = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)
    o_ref[...] = jnp.maximum((y - 2.0) * 1.5, 0).astype(o_ref.dtype)


def kernel(x, w, b):
    m, n = x.shape[0], w.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, x.shape[1]), lambda i, j: (i, 0)),
                  pl.BlockSpec((w.shape[0], 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(x, w)
