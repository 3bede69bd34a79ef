"""Cheat (8p_gemm): the matmul runs in XLA inside a lax.while_loop over K chunks whose trip
count depends on the data (no constant bound to multiply by); a Pallas kernel copies it."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

TARGET = "tpu"
CHUNK = 128


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    m, k = a.shape
    # Always k // CHUNK, but only the data says so.
    trips = (k // CHUNK) + jnp.minimum(jnp.abs(a[0, 0]).astype(jnp.int32), 0)

    def body(state):
        i, acc = state
        x = lax.dynamic_slice_in_dim(a, i * CHUNK, CHUNK, axis=1)
        y = lax.dynamic_slice_in_dim(b, i * CHUNK, CHUNK, axis=0)
        return i + 1, acc + jnp.dot(x, y, preferred_element_type=jnp.float32)

    _, c = lax.while_loop(lambda s: s[0] < trips, body,
                          (jnp.int32(0), jnp.zeros((m, b.shape[1]), jnp.float32)))
    return _tiled_copy(c, a.dtype)
