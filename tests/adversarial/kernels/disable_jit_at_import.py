"""Cheat (8p_gemm): enters jax.disable_jit() at import and never leaves, hoping the harness's
jit/export runs eagerly so the XLA matmul beside a copy kernel executes outside what is
checked. The one trace still records the dot: work outside pallas_call."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

jax.disable_jit().__enter__()


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    c = jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
    return _tiled_copy(c, c.dtype)
