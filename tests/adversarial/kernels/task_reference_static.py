"""Cheat (8p_gemm): calls the task's own reference from the harness (jaxbench internals)."""
from jaxbench.tasks import get_task

TARGET = "tpu"


def kernel(a, b):
    return get_task("8p_gemm").reference(a, b)
