"""Honest (8p_gemm): the control for the grid and alias cheats. A tiled matmul kernel over a
grid with no zero dimension, its float32 output aliased to an input of zeros (the buffer
it accumulates into): each output block starts from its block of that buffer, and every
program adds its K step's product to it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _matmul(a_ref, b_ref, init_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = init_ref[...]  # the aliased buffer's own block: where the sum starts

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = min(m, 256), min(n, 256), min(k, 512)
    out = pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        input_output_aliases={2: 0})(a, b, jnp.zeros((m, n), jnp.float32))
    return out.astype(a.dtype)
