"""Cheat (8p_gemm): writes a file outside its private temp dir with np.save (allowed module and
attribute; only the runtime open() guard sees where it writes)."""
import numpy as np

TARGET = "tpu"

MARKER = "/tmp/jaxbench_adversarial_np_save.npy"


def kernel(a, b):
    np.save(MARKER, np.zeros(4))
    return a
