"""Cheat (8p_gemm): passes interpret=True to its own pallas_call, so the "kernel" lowers to
plain XLA ops (the interpreter) rather than a compiled Pallas kernel: no kernel custom call
would reach the device."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 256, n // 512),
        in_specs=[pl.BlockSpec((256, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 512), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((256, 512), lambda i, j: (i, j)), interpret=True)(a, b)
