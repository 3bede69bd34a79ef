"""Bad kernel for 8p_gemm: allocates host memory without bound while tracing."""
import numpy as np

TARGET = "tpu"


def kernel(a, b):
    hoard = []
    while True:
        hoard.append(np.ones(1 << 27))  # 1 GiB a step
