"""Cheat (8p_gemm): at trace time, looks through jax.live_arrays() for concrete arrays shaped
like the inputs and bakes their product into the module as a constant. The tracer holds no
real inputs (abstract shapes only), so it falls back to copying A: wrong outputs."""
import jax
import jax.numpy as jnp
import numpy as np
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
    live = jax.live_arrays()
    lhs = [x for x in live if x.shape == a.shape and x.dtype == a.dtype]
    rhs = [x for x in live if x.shape == b.shape and x.dtype == b.dtype]
    if lhs and rhs:
        c = jnp.asarray(np.asarray(lhs[-1], np.float32) @ np.asarray(rhs[-1], np.float32), a.dtype)
    else:
        c = a[:, : b.shape[1]]
    return _tiled_copy(c, c.dtype)
