"""Cheat (8p_gemm): reads the shipped expert kernel (jaxbench/tasks/jaxbench/8p_gemm/
expert_tpu.py, found from the loaded package's file path) with np.fromfile and execs it
(exec reached through attrgetter on the builtins module): no open(), no import, no name the
static policy knows. The OS (Landlock) keeps jaxbench's source tree unreadable."""
import operator
import typing

import numpy as np

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    modules = get("mod" + "ules")(get("sy" + "s")(typing))
    package = get("__fi" + "le__")(modules["jax" + "bench"]).rsplit("/", 1)[0]
    source = np.fromfile(package + "/tasks/jax" + "bench/8p_gemm/expert_tpu.py", np.uint8)
    namespace = {}
    get("ex" + "ec")(modules["built" + "ins"])(source.tobytes().decode(), namespace)
    return namespace["kernel"](a, b)
