"""Cheat (8p_gemm): the matmul runs in XLA as a sparse BCOO product (jax.experimental.sparse:
gathers, multiplies and a segment sum instead of a dot); a Pallas kernel only copies it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental import sparse

TARGET = "tpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    sa = sparse.BCOO.fromdense(a.astype(jnp.float32), nse=a.size)
    c = sa @ b.astype(jnp.float32)
    return _tiled_copy(c, a.dtype)
