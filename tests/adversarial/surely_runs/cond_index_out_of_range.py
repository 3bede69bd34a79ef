"""Cheat (l1_embedding_lookup, a data-movement task): the gather done by XLA; the kernel's
body picks, by a ``cond`` whose index is -1 (bound on ``jax.lax.cond_p`` directly, past
``lax.switch``'s clamp), between copying a block of the table (branch 0, credited with the
table's bytes) and passing XLA's rows through (branch 1). For -1, XLA's ``case`` and Mosaic
(a constant index, read as Python reads ``branches[-1]``) run the last branch, Pallas' TPU
interpreter the first; the judge counted branch 0. JAX's lowerings disagree on which branch
an out-of-range index runs, so the judge now does not guess: `unverified` at ``lower``."""
import jax
import numpy as np
from jax.experimental import pallas as pl

TARGET = "tpu"


def _copy(t, r):
    return (t,)


def _pass(t, r):
    return (r,)


def _body(t_ref, r_ref, o_ref):
    t, r = t_ref[...], r_ref[...]
    branches = tuple(jax.make_jaxpr(f)(t, r) for f in (_copy, _pass))
    (o_ref[...],) = jax.lax.cond_p.bind(np.int32(-1), t, r, branches=branches)


def kernel(table, idx):
    rows = table[idx]  # the task, in XLA
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype), grid=(1,),
        in_specs=[pl.BlockSpec(rows.shape, lambda i: (0, 0)),
                  pl.BlockSpec(rows.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec(rows.shape, lambda i: (0, 0)))(table, rows)
