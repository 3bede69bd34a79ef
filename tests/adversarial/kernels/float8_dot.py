"""Cheat (8p_gemm): downgrades the operands to float8_e4m3fn inside the kernel (a 2x faster
MXU path on recent chips) beyond the task's bf16. The f32 ground truth rejects the error."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    a8 = a_ref[...].astype(jnp.float8_e4m3fn)
    b8 = b_ref[...].astype(jnp.float8_e4m3fn)
    o_ref[...] = jnp.dot(a8, b8, preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(a, b)
