"""Cheat (8p_gemm): the same idea inside the kernel body. Pallas keeps the Mosaic (TPU) lowering
of every primitive in a table; the kernel replaces the rule for ``neg`` there with the
identity, so the Mosaic kernel differs from the interpreted one. Refused: the kernel changed
JAX's rules for a primitive."""
import operator
import typing

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

get = operator.attrgetter
modules = get("mod" + "ules")(get("sy" + "s")(typing))
tables = get("lowering_" + "rules")(modules["jax._" + "src.pallas.mosaic.lowering"])
for table in tables.values():
    if jax.lax.neg_p in table:
        table[jax.lax.neg_p] = lambda ctx, x: x


def _matmul(a_ref, b_ref, o_ref):
    acc = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = jnp.negative(jnp.negative(acc)).astype(o_ref.dtype)


def kernel(a, b):
    return pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                  a.dtype))(a, b)
