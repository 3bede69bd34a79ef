"""Cheat (8p_gemm): skips the work of the last row tile and never writes it, hoping the output
buffer is zero-filled and the check looks at a sample. Uninitialised memory is NaN in the
interpreters, and every element is compared (NaN never passes)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(0) < pl.num_programs(0) - 1)
    def _():
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                             preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 64, n // 128),
        in_specs=[pl.BlockSpec((64, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((64, 128), lambda i, j: (i, j)))(a, b)
