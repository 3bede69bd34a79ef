"""Cheat (8p_gemm): the matmul runs in XLA through jnp.einsum in bf16 (no jnp.dot in sight);
a Pallas kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    c = jnp.einsum("mk,kn->mn", a, b)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype))(c)
