"""Bad kernel for 8p_gemm: raises while the module is imported."""
from jax.experimental import pallas as pl

TARGET = "tpu"
BLOCK = pl.BlockSpec((128, 128), lambda i: (i, 0)).does_not_exist


def kernel(a, b):
    return a
