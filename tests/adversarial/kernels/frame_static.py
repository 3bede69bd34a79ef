"""Cheat (8p_gemm): sys._getframe to walk up into the harness's frames and read its locals."""
import sys

TARGET = "tpu"


def kernel(a, b):
    frame = sys._getframe(1)
    while frame is not None and "job" not in frame.f_locals:
        frame = frame.f_back
    return a
