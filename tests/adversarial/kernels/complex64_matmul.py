"""Cheat (8p_gemm): the matmul runs in XLA in complex64 (a FLOP counter that only knows real
dtypes would miss it); a Pallas kernel takes the real part. The judge prices a complex
contraction at four real ones: work outside pallas_call."""
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
    c = jnp.dot(a.astype(jnp.complex64), b.astype(jnp.complex64)).real
    return _tiled_copy(c, a.dtype)
