"""Cheat (8p_gemm): reads its parent's command line (`jaxbench run --out DIR`, the fork server's
arguments) through /proc/self/stat's parent pid, with np.fromfile: no open(), no import of os.
Computes honestly when the read works, so `correct` means the command line was read. Refused
by Landlock (only its own /proc/<pid>) where it exists, by the seal everywhere."""
import numpy as np
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    stat = np.fromfile("/proc/self/stat", np.uint8).tobytes().decode()
    parent = stat.rsplit(")", 1)[1].split()[1]
    cmdline = np.fromfile(f"/proc/{parent}/cmdline", np.uint8)
    assert cmdline.size > 0
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
