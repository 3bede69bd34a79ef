"""Cheat (8p_gemm): never returns (a Python loop at trace time), hoping to hang the harness."""
TARGET = "tpu"


def kernel(a, b):
    n = 0
    while n >= 0:
        n += 1
    return a
