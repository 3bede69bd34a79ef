"""Cheat (8p_gemm): the kernel call nested in 30 one-step scans, deeper than the judge's
counter reads. Before, a counter that raised made the judge skip the data-flow, share and
bytes rules; now it makes the verdict `unverified`."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
DEPTH = 30


def _matmul(x_ref, w_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _tiled(x, w):
    (m, k), n = x.shape, w.shape[1]
    bm, bn, bk = min(m, 256), min(n, 256), min(k, 512)
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)])(x, w)


def _nested(depth, x, w):
    if depth == 0:
        return _tiled(x, w)
    out = jax.lax.scan(lambda c, _: (c, _nested(depth - 1, x, w)), 0, None, length=1)[1]
    return out[0]


def kernel(x, w):
    return _nested(DEPTH, x, w)
