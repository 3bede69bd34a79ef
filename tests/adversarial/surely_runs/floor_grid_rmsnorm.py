"""Honest mistake (12p_rmsnorm): an RMSNorm whose grid is ``rows // 96``
blocks of 96 rows, so the last rows of the output are never written. The verdict must say
where: the ranges that differ between two fills, the block shape, the grid and the rows never
written."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"
BLOCK = 96


def _rmsnorm(x_ref, s_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    y = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)
    o_ref[...] = (y.astype(o_ref.dtype).astype(jnp.float32)
                  * s_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def kernel(x, scale):
    *lead, h = x.shape
    x2 = x.reshape(-1, h)
    rows = x2.shape[0]
    out = pl.pallas_call(
        functools.partial(_rmsnorm, eps=1e-5), out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(rows // BLOCK,),  # 512 // 96 = 5 blocks: rows 480:512 never written
        in_specs=[pl.BlockSpec((BLOCK, h), lambda i: (i, 0)), pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((BLOCK, h), lambda i: (i, 0)))(x2, scale.reshape(1, h))
    return out.reshape(x.shape)
