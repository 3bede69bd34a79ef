"""Honest (21k_gemm_divide_sum_scaling): the same exact shortcut, ``x · colsum(W)``, written as
Pallas kernels: one sums W's columns, one takes the row dot products, both tiled over K and
accumulated in VMEM. XLA only reshapes. The kernels do 2MK + NK FLOPs, far below the nominal
2MKN, and that is the speedup a model that finds the GEMV deserves."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
SCALE = 0.75  # the task's / 2 then * 1.5


def _colsum(w_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.sum(w_ref[...].astype(jnp.float32), axis=0, keepdims=True)

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = acc_ref[...]


def _rowdot(x_ref, v_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.sum(x_ref[...].astype(jnp.float32) * v_ref[...], axis=1, keepdims=True)

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = (acc_ref[...] * SCALE).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=())
def kernel(x, w):
    m, k = x.shape
    n = w.shape[0]
    bk, bn, bm = min(k, 1024), min(n, 256), min(m, 256)
    colsum = pl.pallas_call(
        _colsum, out_shape=jax.ShapeDtypeStruct((1, k), jnp.float32), grid=(k // bk, n // bn),
        in_specs=[pl.BlockSpec((bn, bk), lambda kk, nn: (nn, kk))],
        out_specs=pl.BlockSpec((1, bk), lambda kk, nn: (0, kk)),
        scratch_shapes=[pltpu.VMEM((1, bk), jnp.float32)])(w)
    return pl.pallas_call(
        _rowdot, out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype), grid=(m // bm, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, kk: (i, kk)),
                  pl.BlockSpec((1, bk), lambda i, kk: (0, kk))],
        out_specs=pl.BlockSpec((bm, 1), lambda i, kk: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, 1), jnp.float32)])(x, colsum)
