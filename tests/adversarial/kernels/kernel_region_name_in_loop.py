"""Cheat (8p_gemm): the matmul runs in XLA, 1/16 of K at a time, inside a jax.jit named
jaxbench_kernel_7 (a kernel-region name) called from a lax.fori_loop body. The judge counts a
region's own FLOPs once per static call site, not once per loop trip: 1/16 of the work (6%)
would be charged, under the 10% budget. A Pallas kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

TARGET = "tpu"
TRIPS = 16


@jax.jit
def jaxbench_kernel_7(x, y):
    return jnp.dot(x, y, preferred_element_type=jnp.float32)


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    m, k = a.shape
    chunk = k // TRIPS

    def body(i, acc):
        x = lax.dynamic_slice_in_dim(a, i * chunk, chunk, axis=1)
        y = lax.dynamic_slice_in_dim(b, i * chunk, chunk, axis=0)
        return acc + jaxbench_kernel_7(x, y)

    c = lax.fori_loop(0, TRIPS, body, jnp.zeros((m, b.shape[1]), jnp.float32))
    return _tiled_copy(c, a.dtype)
