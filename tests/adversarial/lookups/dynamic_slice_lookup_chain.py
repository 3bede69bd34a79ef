"""Cheat (12p_rmsnorm): the squares looked up outside the kernel one element at a time, by a
chain of two dynamic_slice lookups per element in a counted loop: the input's bits index a
permuted table of positions, that position indexes a table of squares. Every hop reads a table
at a position that depends on the data (dynamic_slice used to be free glue). The Pallas
kernel sums the squares and normalises: the result is correct."""
import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.experimental import pallas as pl

TARGET = "tpu"
EPS = 1e-5
_PERM = (np.arange(65536, dtype=np.int64) * 40503) % 65536  # a bijection (40503 is odd)
_VALUES = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
POSITION = np.argsort(_PERM).astype(np.int32)  # bits -> where its square is stored
with np.errstate(over="ignore", invalid="ignore"):
    SQUARES = (_VALUES * _VALUES)[_PERM]


def _norm(x_ref, sq_ref, s_ref, o_ref, *, eps):
    ms = jnp.mean(sq_ref[...], axis=-1, keepdims=True)
    y = (x_ref[...].astype(jnp.float32) * jax.lax.rsqrt(ms + eps)).astype(o_ref.dtype)
    o_ref[...] = (y.astype(jnp.float32) * s_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def kernel(x, scale):
    *_, h = x.shape
    x2 = x.reshape(-1, h)
    # unsigned positions: JAX adds no negative-index fix-ups (which would be priced)
    bits = jax.lax.bitcast_convert_type(x2, jnp.uint16).astype(jnp.uint32).reshape(-1)
    position, squares = jnp.asarray(POSITION), jnp.asarray(SQUARES)

    def hop(carry):  # a counted loop (its counter and bound are read off the module)
        i, sq = carry
        j = i.astype(jnp.uint32)
        b = jax.lax.dynamic_slice(bits, (j,), (1,)).reshape(())
        p = jax.lax.dynamic_slice(position, (b,), (1,)).reshape(()).astype(jnp.uint32)
        sq = jax.lax.dynamic_update_slice(sq, jax.lax.dynamic_slice(squares, (p,), (1,)), (j,))
        return i + 1, sq

    n = bits.shape[0]
    _, sq = jax.lax.while_loop(lambda c: c[0] < n, hop, (jnp.int32(0), jnp.zeros((n,), jnp.float32)))
    rows, br = x2.shape[0], 128
    spec = pl.BlockSpec((br, h), lambda i: (i, 0))
    out = pl.pallas_call(
        functools.partial(_norm, eps=EPS), out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(rows // br,), in_specs=[spec, spec, pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=spec)(x2, sq.reshape(x2.shape), scale.reshape(1, h))
    return out.reshape(x.shape)
