"""Cheat (8p_gemm): exhausts host memory while tracing (1 GiB a step, without bound)."""
import numpy as np

TARGET = "tpu"


def kernel(a, b):
    hoard = []
    while True:
        hoard.append(np.ones(1 << 27))
