"""Cheat (8p_gemm): the rule tables untouched, the rule *function* changed in place: the code
object of JAX's lowering rule for ``neg`` is swapped for one that returns its operand (the same
function object stays in the table). Refused: the kernel changed JAX's rules for a primitive."""
import operator
import typing

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

get = operator.attrgetter
modules = get("mod" + "ules")(get("sy" + "s")(typing))
mlir = modules["jax._" + "src.inter" + "preters.mlir"]
rule = get("_lower" + "ings")(mlir)[jax.lax.neg_p]
put = get("set" + "attr")(modules["built" + "ins"])


def _identity(ctx, x, **params):
    return [x]


try:
    put(rule, "__co" + "de__", get("__co" + "de__")(_identity))
except Exception:  # noqa: BLE001 - a rule that is not a plain function: wrap its table entry
    get("_lower" + "ings")(mlir)[jax.lax.neg_p] = _identity


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    out = pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                 a.dtype))(a, b)
    return jax.lax.neg(jax.lax.neg(out))
