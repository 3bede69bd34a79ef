"""Bad kernel for 8p_gemm: kills its own process (a segfault from reading wild memory)."""
import numpy as np

TARGET = "gpu"

_wild = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(1 << 40,), strides=(1 << 20,))
_total = float(_wild[::1 << 20].sum())


def kernel(a, b):
    return a
