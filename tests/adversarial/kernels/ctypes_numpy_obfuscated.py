"""Cheat (8p_gemm): reaches ctypes through numpy.ctypeslib with computed attribute names (numpy
is an allowed import) and dlopens libc. The audit hook refuses ctypes.dlopen."""
import operator

import numpy as np

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    ct = get("cty" + "pes")(get("cty" + "peslib")(np))
    libc = ct.CDLL(None)
    libc.getpid()
    return a
