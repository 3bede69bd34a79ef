"""Cheat (8p_gemm): a primitive of the kernel's own (made from the class of a JAX primitive,
so no import names it), wrapped around the kernel's output. Its lowering rule reads the
platform it lowers for: on the CPU (the interpret-mode module, which is what runs there) it is
the identity; for the chip it returns zeros. The two modules then compute different things
with the same op names outside the kernel. Refused: a primitive JAX does not define."""
import operator
import typing

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

get = operator.attrgetter
modules = get("mod" + "ules")(get("sy" + "s")(typing))
mlir = modules["jax._" + "src.inter" + "preters.mlir"]

fast_path = type(jax.lax.add_p)("fast_path")
get("def_" + "impl")(fast_path)(lambda x: x)
get("def_" + "abstract_eval")(fast_path)(lambda x: x)


def _rule(ctx, x):
    if "cpu" in ctx.module_context.platforms:
        return [x]
    return mlir.lower_fun(jnp.zeros_like, multiple_results=False)(ctx, x)


get("register_" + "lowering")(mlir)(fast_path, _rule)


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    out = pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                 a.dtype))(a, b)
    return fast_path.bind(out)
