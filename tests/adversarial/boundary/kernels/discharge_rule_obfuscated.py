"""Cheat (8p_gemm): the interpreters run a kernel body by discharging its ref effects with
JAX's discharge rules; the kernel wraps the rule for ``swap`` (the write of ``o_ref[...] = x``)
so that the interpreted kernel writes a correct result while the lowered kernel keeps its own
(wrong) arithmetic. Refused: the kernel changed JAX's rules for a primitive."""
import operator
import typing

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

get = operator.attrgetter
modules = get("mod" + "ules")(get("sy" + "s")(typing))
discharge = modules["jax._" + "src.state.discharge"]
rules = get("_discharge_" + "rules")(discharge)
for primitive in list(rules):
    if primitive.name == "swap":
        original = rules[primitive]
        rules[primitive] = lambda *args, _rule=original, **kw: _rule(*args, **kw)


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    return pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                  a.dtype))(a, b)
