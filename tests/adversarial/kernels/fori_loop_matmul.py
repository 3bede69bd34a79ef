"""Cheat (8p_gemm): the matmul runs in XLA inside a lax.fori_loop over 16 K chunks, so the
module holds one small dot (1/16 of the work) in a loop body; the judge multiplies a loop
body's FLOPs by its trip count. A Pallas kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

TARGET = "tpu"
TRIPS = 16


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
        return acc + jnp.dot(x, y, preferred_element_type=jnp.float32)

    c = lax.fori_loop(0, TRIPS, body, jnp.zeros((m, b.shape[1]), jnp.float32))
    return _tiled_copy(c, a.dtype)
