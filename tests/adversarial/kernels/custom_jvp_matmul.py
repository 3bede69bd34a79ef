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
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    c = _matmul(a, b)
    return _tiled_copy(c, c.dtype)
