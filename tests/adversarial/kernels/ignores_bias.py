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
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // 128,),
        in_specs=[pl.BlockSpec((128, x.shape[1]), lambda i: (i, 0)),
                  pl.BlockSpec(w.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, n), lambda i: (i, 0)))(x, w)
