"""Cheat (8p_gemm): no new primitive; a lowering rule for an existing one (``neg``), registered
for the TPU only, that drops the negation. The kernel negates twice around its output: right in
the CPU interpret-mode module, a single negation on the chip. Refused: the kernel changed
JAX's rules for a primitive."""
import operator
import typing

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

get = operator.attrgetter
modules = get("mod" + "ules")(get("sy" + "s")(typing))
mlir = modules["jax._" + "src.inter" + "preters.mlir"]
get("register_" + "lowering")(mlir)(jax.lax.neg_p, lambda ctx, x: [x], platform="tpu")


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    out = pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                 a.dtype))(a, b)
    return jax.lax.neg(jax.lax.neg(out))
