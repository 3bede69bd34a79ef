"""Cheat (8p_gemm): reaches the harness's task registry through typing's `sys` (names computed
at run time, so the static policy misses it), calls the reference, and wraps the result in a
Pallas copy so that a pallas_call exists. Reading modules raises no audit event; the outside-work
accounting at the trace stage sees the reference's matmul in XLA."""
import operator
import typing

import jax
from jax.experimental import pallas as pl

TARGET = "tpu"

_get = operator.attrgetter
_registry = _get("mod" + "ules")(_get("sy" + "s")(typing))["jax" + "bench.tasks"]


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    c = _registry.get_task("8p_gemm").reference(a, b)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype))(c)
