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
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    c = jaxbench_kernel_7(a, b)
    return _tiled_copy(c, c.dtype)
