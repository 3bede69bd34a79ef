"""Cheat (8p_gemm): hides an import of os inside exec() and evaluates code with eval()."""
TARGET = "tpu"

exec("import os as _o")


def kernel(a, b):
    return eval("a @ b")
