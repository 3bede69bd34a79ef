"""Cheat (8p_gemm): the XLA matmul wrapped in a jax.custom_jvp function (a jaxpr walker that
does not descend into custom_jvp_call's sub-jaxpr would not see the dot); a Pallas kernel
only copies the result. The exported module holds the primal dot outside kernels."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


@jax.custom_jvp
def _matmul(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


@_matmul.defjvp
def _matmul_jvp(primals, tangents):
    return _matmul(*primals), jnp.zeros((primals[0].shape[0], primals[1].shape[1]),
                                        primals[0].dtype)


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    c = _matmul(a, b)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype))(c)
