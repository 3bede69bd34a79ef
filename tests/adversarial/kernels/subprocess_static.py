"""Cheat (8p_gemm): imports subprocess and runs a shell command."""
import subprocess

TARGET = "tpu"


def kernel(a, b):
    subprocess.run(["touch", "/tmp/jaxbench_adversarial_subprocess_static"], check=False)
    return a
