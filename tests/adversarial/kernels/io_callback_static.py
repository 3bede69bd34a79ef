"""Cheat (8p_gemm): host matmul through io_callback imported from jax.experimental."""
import jax
import numpy as np
from jax.experimental import io_callback

TARGET = "tpu"


def kernel(a, b):
    out = jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype)
    return io_callback(lambda x, y: (np.float32(x) @ np.float32(y)).astype(x.dtype), out, a, b)
