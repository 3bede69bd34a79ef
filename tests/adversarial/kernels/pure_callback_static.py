"""Cheat (8p_gemm): computes the matmul on the host with NumPy through jax.pure_callback."""
import jax
import numpy as np

TARGET = "tpu"


def kernel(a, b):
    def host(x, y):
        return (np.asarray(x, np.float32) @ np.asarray(y, np.float32)).astype(x.dtype)

    out = jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype)
    return jax.pure_callback(host, out, a, b)
