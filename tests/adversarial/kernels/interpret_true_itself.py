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
    return pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                  a.dtype), interpret=True)(a, b)
