"""Cheat (8p_gemm): behaves on the first traces only. It counts its own traces in a module-level
list and, from the third trace on, drops half of K. A harness that checks what it traced once
and then runs a fresh trace would accept it; the worker traces for the trace check, again for
cross-lowering (under the TPU lowering context), again for the trial runs and again for the
TPU-interpreter run, and judges the outputs of the later ones."""
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
    body = _full if _traces[0] <= 2 else _half
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        body, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128,),
        in_specs=[pl.BlockSpec((128, k), lambda i: (i, 0)), pl.BlockSpec((k, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, n), lambda i: (i, 0)))(a, b)
