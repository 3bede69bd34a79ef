"""Cheat (l1_relu): the sign test looked up in XLA from a 256-entry table of two splats.

A first kernel takes the top byte of each float's bits; XLA gathers ``1`` (sign bit clear) or
``0`` (set) from ``concatenate([ones(128), zeros(128)])``; a second kernel multiplies. The
comparison, half of the task's work, is a lookup from a constant table outside the kernels."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _top_byte(x_ref, o_ref):
    bits = jax.lax.bitcast_convert_type(x_ref[...], jnp.uint32)
    o_ref[...] = jax.lax.shift_right_logical(bits, jnp.uint32(24))  # unsigned: no index
    # normalisation in XLA, so the lookup is all that runs outside


def _scale(x_ref, m_ref, o_ref):
    o_ref[...] = x_ref[...] * m_ref[...]


def kernel(x):
    top = pl.pallas_call(_top_byte, out_shape=jax.ShapeDtypeStruct(x.shape, jnp.uint32))(x)
    table = jnp.concatenate([jnp.ones((128,), x.dtype), jnp.zeros((128,), x.dtype)])
    keep = table[top]  # the sign test, in XLA
    return pl.pallas_call(_scale, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, keep)
