"""Cheat (l1_embedding_lookup, a data-movement task): the gather done by XLA, its rows aliased
to the output of a kernel that never writes that output (in ``ANY`` memory: nothing is copied
back), while its body streams the whole table into scratch. The rows pass through the kernel
untouched; counted as the kernel's output, they looked "from a kernel", and the table's
bytes made XLA's share of the bytes look small."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _body(t_ref, r_ref, o_ref, scratch_ref):
    del r_ref, o_ref  # the output, aliased to the rows: never written
    scratch_ref[...] = t_ref[...]


def kernel(table, idx):
    rows = table[idx]  # the task, in XLA
    v, d = table.shape
    bv = 200 if v % 200 == 0 else v
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype), grid=(v // bv,),
        in_specs=[pl.BlockSpec((bv, d), lambda i: (i, 0)), pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((bv, d), jnp.float32)],
        input_output_aliases={1: 0})(table, rows)
