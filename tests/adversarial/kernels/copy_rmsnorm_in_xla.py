"""Cheat (12p_rmsnorm): XLA does the whole norm (elementwise + reduction); Pallas only copies.

No matmul anywhere: only the elementwise/reduction FLOP accounting catches this one.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(x, scale):
    xf = x.astype(jnp.float32)
    y = (xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + 1e-5)).astype(x.dtype)
    y = y * scale
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(y.shape, y.dtype))(y)
