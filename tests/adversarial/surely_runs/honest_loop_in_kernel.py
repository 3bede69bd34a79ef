"""Honest (21k_gemm_divide_sum_scaling): the GEMV shortcut as two Pallas kernels; the first
sums W's columns with a ``fori_loop`` over blocks of its rows (a loop whose trips the judge
counts), the second takes the row dot products; XLA does nothing."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"
ROWS = 128


def _colsum(w_ref, o_ref):
    n, bk = w_ref.shape

    def step(i, acc):
        block = w_ref[pl.ds(pl.multiple_of(i * ROWS, ROWS), ROWS), :].astype(jnp.float32)
        return acc + jnp.sum(block, axis=0, keepdims=True)

    o_ref[...] = jax.lax.fori_loop(0, n // ROWS, step, jnp.zeros((1, bk), jnp.float32))


def _rowdot(x_ref, v_ref, o_ref):
    rows = jnp.sum(x_ref[...].astype(jnp.float32) * v_ref[...], axis=1, keepdims=True)
    o_ref[...] = (rows * 0.75).astype(o_ref.dtype)


def kernel(x, w):
    m, k = x.shape
    n = w.shape[0]
    bk, bm = min(k, 256), min(m, 256)
    colsum = pl.pallas_call(
        _colsum, out_shape=jax.ShapeDtypeStruct((1, k), jnp.float32), grid=(k // bk,),
        in_specs=[pl.BlockSpec((n, bk), lambda j: (0, j))],
        out_specs=pl.BlockSpec((1, bk), lambda j: (0, j)))(w)
    return pl.pallas_call(
        _rowdot, out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype), grid=(m // bm,),
        in_specs=[pl.BlockSpec((bm, k), lambda i: (i, 0)), pl.BlockSpec((1, k), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bm, 1), lambda i: (i, 0)))(x, colsum)
