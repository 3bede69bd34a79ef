"""Cheat (l1_embedding_lookup): the gather done by XLA, copied by a kernel that also declares
a second, large output it never writes and nobody reads. Counted as bytes the kernel moves,
that output made XLA's share of the bytes look small."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(r_ref, o_ref, pad_ref):
    o_ref[...] = r_ref[...]  # pad_ref: never written


def kernel(table, idx):
    rows = table[idx]  # the task, in XLA
    pad = jax.ShapeDtypeStruct((64 * rows.shape[0], rows.shape[1]), jnp.float32)
    out, _ = pl.pallas_call(_copy, out_shape=(jax.ShapeDtypeStruct(rows.shape, rows.dtype),
                                              pad))(rows)
    return out
