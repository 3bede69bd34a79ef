"""Cheat (8p_gemm): a host callback inside the kernel body, reached through
operator.attrgetter with a computed name so the static policy does not see it.
The trace stage finds the callback primitive inside the pallas_call body."""
import operator

import jax
import numpy as np
from jax.experimental import pallas as pl

TARGET = "tpu"

_host_call = operator.attrgetter("pure_" + "call" + "back")(jax)


def _host_matmul(x, y):
    return (np.asarray(x, np.float32) @ np.asarray(y, np.float32)).astype(x.dtype)


def _kernel(a_ref, b_ref, o_ref):
    a, b = a_ref[...], b_ref[...]
    o_ref[...] = _host_call(_host_matmul, jax.ShapeDtypeStruct(o_ref.shape, o_ref.dtype), a, b)


def kernel(a, b):
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype))(a, b)
