"""Cheat (8p_gemm): checked != run. It counts its own traces in a module-level list: the first
trace (the one a harness inspects) drops half of K, every later trace (the ones an older harness
lowered, ran and timed) computes the full product. The untrusted side traces exactly once and
both exports come from that trace, so what is judged and run is the first trace: incorrect."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

_traces = [0]


def _full(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _half(a_ref, b_ref, o_ref):
    h = a_ref.shape[1] // 2
    o_ref[...] = jnp.dot(a_ref[:, :h], b_ref[:h, :],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    _traces[0] += 1
    body = _half if _traces[0] == 1 else _full
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(a, b)
