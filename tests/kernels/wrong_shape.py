"""Bad kernel for 8p_gemm: computes only the first 128 output columns."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    m, k = a.shape
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, 128), a.dtype), grid=(m // 128,),
        in_specs=[pl.BlockSpec((128, k), lambda i: (i, 0)), pl.BlockSpec((k, 128), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)))(a, b)
