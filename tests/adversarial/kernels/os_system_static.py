"""Cheat (8p_gemm): plain `import os` and os.system to touch a file outside the temp dir."""
import os

TARGET = "tpu"


def kernel(a, b):
    os.system("touch /tmp/jaxbench_adversarial_os_static")
    return a
