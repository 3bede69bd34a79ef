"""Cheat (8p_gemm): a correct kernel that leaks its operands to the host with jax.debug.print
inside the kernel body (a host callback on every grid step)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    jax.debug.print("{}", a_ref[0, 0])
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(
        o_ref.dtype)


def kernel(a, b):
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype))(a, b)
