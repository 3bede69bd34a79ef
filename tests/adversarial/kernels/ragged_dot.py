"""Cheat (8p_gemm): the matmul runs in XLA through jax.lax.ragged_dot (one group holding every
row), an op a dot_general counter may not know; a Pallas kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def kernel(a, b):
    groups = jnp.array([a.shape[0]], jnp.int32)
    c = jax.lax.ragged_dot(a, b[None], groups, preferred_element_type=jnp.float32)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, a.dtype))(c)
