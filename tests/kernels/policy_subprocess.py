"""Bad kernel for 8p_gemm: imports subprocess (forbidden by the static policy)."""
import subprocess

TARGET = "gpu"


def kernel(a, b):
    subprocess.run(["true"])
    return a
