"""Cheat (8p_gemm): replaces time.perf_counter (the timer) through sys.modules with computed
names; the static policy sees only a subscript store. The integrity snapshot catches it."""
import operator
import typing

import jax
from jax.experimental import pallas as pl

TARGET = "tpu"

_mods = operator.attrgetter("mod" + "ules")(operator.attrgetter("sy" + "s")(typing))
_mods["ti" + "me"].perf_counter = lambda: 0.0


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype))(a)
