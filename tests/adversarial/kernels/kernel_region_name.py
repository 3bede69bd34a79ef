"""Cheat (8p_gemm): the matmul runs in XLA inside a jax.jit whose function is named
jaxbench_kernel_7, mimicking the judge's kernel regions (work inside a kernel region is not
counted as outside work, if the judge trusts names). A Pallas kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


@jax.jit
def jaxbench_kernel_7(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    c = jaxbench_kernel_7(a, b)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype))(c)
