"""Cheat (8p_gemm): no Pallas at all, the whole matmul is plain jnp (XLA)."""
import jax.numpy as jnp

TARGET = "tpu"


def kernel(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
