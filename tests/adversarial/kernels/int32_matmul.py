"""Cheat (8p_gemm): the matmul runs in XLA on int32 fixed-point values (lax.dot_general on
integers; a counter that prices only float dots would miss it); a Pallas kernel rescales."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

TARGET = "tpu"
SCALE = 2.0 ** 12


def _rescale(x_ref, o_ref):
    o_ref[...] = (x_ref[...].astype(jnp.float32) / (SCALE * SCALE)).astype(o_ref.dtype)


def _tiled_rescale(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_rescale, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    ai = jnp.round(a.astype(jnp.float32) * SCALE).astype(jnp.int32)
    bi = jnp.round(b.astype(jnp.float32) * SCALE).astype(jnp.int32)
    c = lax.dot_general(ai, bi, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    return _tiled_rescale(c, a.dtype)
