"""Cheat (12p_rmsnorm): the row sums of the mean square accumulated outside the kernels by a
scatter-add. A first kernel squares and adds groups of four and says which row each partial
belongs to; XLA scatters the partials into their rows (a quarter of the elements, at positions
a kernel chose: priced as work, combiner and lookup, not as one add each); a second kernel
normalises. The result is correct."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"
EPS = 1e-5
GROUP = 4


def _partials(x_ref, p_ref, r_ref, *, br):
    x = x_ref[...].astype(jnp.float32)
    rows, h = x.shape
    p_ref[...] = jnp.sum((x * x).reshape(rows, h // GROUP, GROUP), axis=-1)
    row = jax.lax.broadcasted_iota(jnp.int32, (rows, h // GROUP), 0) + pl.program_id(0) * br
    r_ref[...] = row


def _norm(x_ref, ss_ref, s_ref, o_ref, *, eps, h):
    r = jax.lax.rsqrt(ss_ref[...] / h + eps)
    y = (x_ref[...].astype(jnp.float32) * r).astype(o_ref.dtype)
    o_ref[...] = (y.astype(jnp.float32) * s_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def kernel(x, scale):
    *_, h = x.shape
    x2 = x.reshape(-1, h)
    rows, br = x2.shape[0], 128
    spec = pl.BlockSpec((br, h), lambda i: (i, 0))
    pspec = pl.BlockSpec((br, h // GROUP), lambda i: (i, 0))
    partials, row = pl.pallas_call(
        functools.partial(_partials, br=br),
        out_shape=(jax.ShapeDtypeStruct((rows, h // GROUP), jnp.float32),
                   jax.ShapeDtypeStruct((rows, h // GROUP), jnp.int32)),
        grid=(rows // br,), in_specs=[spec], out_specs=(pspec, pspec))(x2)
    at = row.reshape(-1).astype(jnp.uint32)  # unsigned: no negative-index fix-ups (priced)
    sums = jnp.zeros((rows,), jnp.float32).at[at].add(partials.reshape(-1))
    out = pl.pallas_call(
        functools.partial(_norm, eps=EPS, h=h), out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(rows // br,),
        in_specs=[spec, pl.BlockSpec((br, 1), lambda i: (i, 0)),
                  pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=spec)(x2, sums.reshape(rows, 1), scale.reshape(1, h))
    return out.reshape(x.shape)
