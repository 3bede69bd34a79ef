"""Cheat (8p_gemm): loads libc through ctypes to call native code."""
import ctypes

TARGET = "tpu"


def kernel(a, b):
    ctypes.CDLL(None).system(b"true")
    return a
