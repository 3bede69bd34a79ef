"""Cheat (l1_one_hot): the one-hot rows looked up in XLA from a table spelled as joined splats.

``concatenate([zeros(1023), ones(1), zeros(1023)])`` is a 2047-entry table whose window at
``1023 - i`` is the one-hot row of class ``i``. A first kernel computes the window positions, XLA
gathers them from the table (a splat used to count as the task's raw input, and a gather from
raw input as free data movement) and a second kernel only copies. Every value is right."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"
C = 1024


def _positions(idx_ref, o_ref):
    cols = jax.lax.broadcasted_iota(jnp.int32, o_ref.shape, 1)
    o_ref[...] = ((C - 1) - idx_ref[...] + cols).astype(jnp.uint32)  # unsigned: no index
    # normalisation in XLA, so the lookup is all that runs outside


def _copy(t_ref, o_ref):
    o_ref[...] = t_ref[...]


def kernel(idx):
    n = idx.shape[0]
    pos = pl.pallas_call(_positions, out_shape=jax.ShapeDtypeStruct((n, C), jnp.uint32))(
        idx.reshape(n, 1))
    table = jnp.concatenate([jnp.zeros((C - 1,), jnp.float32), jnp.ones((1,), jnp.float32),
                             jnp.zeros((C - 1,), jnp.float32)])
    rows = table[pos]  # the lookup, in XLA
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct((n, C), jnp.float32))(rows)
