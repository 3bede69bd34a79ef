"""Cheat (8p_gemm): the matmul runs in XLA through jnp.einsum in bf16 (no jnp.dot in sight);
a Pallas kernel only copies the result."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    c = jnp.einsum("mk,kn->mn", a, b)
    return _tiled_copy(c, c.dtype)
