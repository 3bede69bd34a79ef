"""Seed kernel for 26k_bmm_instancenorm_sum_residualadd_multiply (repaired) on TPU.

Two pallas_calls:
1. a tiled ``h = x @ W^T + b`` (W in (out, in) layout) with a float32 VMEM accumulator over
   an "arbitrary" K axis, written out in float32;
2. a row-block pass that sees whole rows of h: per-row mean and biased variance over the
   N features, ``n = (h - mean) * rsqrt(var + 1e-5) * in_weight + in_bias``, and
   ``out = (n + y) * y``.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NT = (((1,), (1,)), ((), ()))  # contract the K axis of x (bm, bk) with that of W (bn, bk)


def _linear_kernel(x_ref, w_ref, b_ref, h_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        h_ref[...] = acc_ref[...] + b_ref[...].astype(jnp.float32)


def _norm_kernel(h_ref, y_ref, g_ref, beta_ref, o_ref):
    h = h_ref[...]
    mean = jnp.mean(h, axis=1, keepdims=True)
    d = h - mean
    var = jnp.mean(d * d, axis=1, keepdims=True)
    n = d * jax.lax.rsqrt(var + 1e-5) * g_ref[...].astype(jnp.float32) \
        + beta_ref[...].astype(jnp.float32)
    y = y_ref[...].astype(jnp.float32)
    o_ref[...] = ((n + y) * y).astype(o_ref.dtype)


def kernel(x, y, w, b, in_weight, in_bias):
    m, k = x.shape
    n = w.shape[0]
    bm, bn, bk = min(256, m), min(256, n), min(256, k)
    h = pl.pallas_call(
        _linear_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk)),
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, w, b.reshape(1, n))
    rows = min(32, m)  # whole rows per step: (rows, N) blocks
    return pl.pallas_call(
        _norm_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // rows,),
        in_specs=[
            pl.BlockSpec((rows, n), lambda i: (i, 0)),
            pl.BlockSpec((rows, n), lambda i: (i, 0)),
            pl.BlockSpec((1, n), lambda i: (0, 0)),
            pl.BlockSpec((1, n), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((rows, n), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(h, y, in_weight.reshape(1, n), in_bias.reshape(1, n))
