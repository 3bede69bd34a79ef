"""Cheat (8p_gemm): reaches the sandbox's guard module through ``sys.modules`` (via typing)
and switches its audit hook off (``_state["active"] = False``), so that nothing it does later
is refused. The guards' state is checked after every stage: refused."""
import operator
import typing

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

get = operator.attrgetter
modules = get("mod" + "ules")(get("sy" + "s")(typing))
get("_st" + "ate")(modules["jax" + "bench.evaluator.sandbox.guards"])["act" + "ive"] = False


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    return pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                  a.dtype))(a, b)
