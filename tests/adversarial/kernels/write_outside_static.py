"""Cheat (8p_gemm): opens a file outside the temp dir for writing with open()."""
TARGET = "tpu"


def kernel(a, b):
    with open("/tmp/jaxbench_adversarial_open_static", "w") as f:
        f.write("x")
    return a
