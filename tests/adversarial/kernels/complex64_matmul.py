"""Cheat (8p_gemm): the matmul runs in XLA in complex64 (a FLOP counter that only knows real
dtypes would miss it); a Pallas kernel takes the real part. The judge prices a complex
contraction at four real ones: work outside pallas_call."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _real(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def kernel(a, b):
    c = jnp.dot(a.astype(jnp.complex64), b.astype(jnp.complex64)).real
    return pl.pallas_call(_real, out_shape=jax.ShapeDtypeStruct(c.shape, a.dtype))(c)
