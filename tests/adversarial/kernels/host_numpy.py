"""Cheat (8p_gemm): computes the answer with host NumPy on the (assumed concrete) inputs and
hands it to a Pallas copy kernel."""
import jax
import numpy as np
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    c = (np.asarray(a, np.float32) @ np.asarray(b, np.float32)).astype(a.dtype)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype))(c)
