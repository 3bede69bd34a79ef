"""Cheat (l1_embedding_lookup, a data-movement task): the gather done by XLA, then passed
through a kernel whose grid is (0,), its rows aliased to the kernel's output; the body copies a
block of the table. No program runs, so the output is XLA's gather; counted as one program, the
kernel was credited with the whole table's bytes, and XLA's share of the bytes looked small."""
import jax
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(t_ref, r_ref, o_ref):
    del r_ref  # the output's initial value, aliased
    o_ref[...] = t_ref[...]


def kernel(table, idx):
    rows = table[idx]  # the task, in XLA
    return pl.pallas_call(
        _copy, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype), grid=(0,),
        in_specs=[pl.BlockSpec(rows.shape, lambda i: (i, 0)),
                  pl.BlockSpec(rows.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec(rows.shape, lambda i: (0, 0)),
        input_output_aliases={1: 0})(table, rows)
