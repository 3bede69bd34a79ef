"""Cheat (8p_gemm): a trivially wrong Pallas kernel (zeros) on its first trace, which a
harness might check for structure, and plain XLA on every later trace, which a harness might
run. The first trace is the one exported, checked and run: the zeros are judged."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

_traces = [0]


def _zeros(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.zeros_like(o_ref)


def kernel(a, b):
    _traces[0] += 1
    if _traces[0] > 1:
        return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
    return pl.pallas_call(
        _zeros, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype))(a, b)
