"""Cheat (l1_embedding_lookup): the gather done by XLA, and a Pallas kernel that copies the
gathered rows and reads one (8, 128) block of the embedding table beside them (an elementwise
select that keeps the rows). Counted by its operands' full sizes, the kernel "moved" the whole
table and XLA's gather looked like a small share of the bytes; counted as it moves blocks (one
block of the table), the gather is nearly all of them."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(t_ref, r_ref, o_ref):
    o_ref[...] = r_ref[...]
    block = t_ref[...]
    # keeps the rows (a float compared with itself: the judge cannot call it true, NaN aside)
    o_ref[0:8, 0:128] = jnp.where(block == block, r_ref[0:8, 0:128], block)


def kernel(table, idx):
    rows = table[idx]  # the task, in XLA
    return pl.pallas_call(
        _copy, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype), grid=(1,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (0, 0)),
                  pl.BlockSpec(rows.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec(rows.shape, lambda i: (0, 0)))(table, rows)
