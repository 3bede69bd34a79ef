"""Seed kernel for 43k_gemm_batchnorm_scaling_softmax on NVIDIA GPUs (Pallas Triton backend).

1. Grid (M/bm, N/bn): each program computes one (bm, bn) GEMM tile (K loop with a
   float32 register accumulator), adds the bias, stores y in float32 (rounding it to
   bf16 would move the logits by up to ~3e-2), forms the logits z = scale * BN_eval(y)
   in float32 and writes the tile's row max and row sum of exp(z - tile max) to column j
   of two (M, N/bn) float32 partial arrays.
2. Grid (M/bm, N/bn): each program merges its rows' partials into the row max and the
   row sum of exp (N/bn must be a power of two, as Triton blocks are), recomputes z from
   the stored y and writes exp(z - max) / sum for its tile.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

EPS = 1e-5


def _logits(y, g_ref, be_ref, mu_ref, var_ref, s_ref):
    """scale * BN_eval(y) in float32, from the (bn,) BN vectors and the (1, 1) scale."""
    f32 = jnp.float32
    inv = jax.lax.rsqrt(var_ref[...].astype(f32) + EPS) * g_ref[...].astype(f32)
    z = (y - mu_ref[...].astype(f32)[None, :]) * inv[None, :] + be_ref[...].astype(f32)[None, :]
    return s_ref[...] * z


def _gemm_stats_kernel(x_ref, w_ref, b_ref, g_ref, be_ref, mu_ref, var_ref, s_ref,
                       y_ref, max_ref, sum_ref, *, bk, nk):
    bm, bn = y_ref.shape
    f32 = jnp.float32

    def body(step, acc):
        a = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(a, w, preferred_element_type=f32)

    acc = jax.lax.fori_loop(0, nk, body, jnp.zeros((bm, bn), f32))
    y = acc + b_ref[...].astype(f32)[None, :]
    y_ref[...] = y
    z = _logits(y, g_ref, be_ref, mu_ref, var_ref, s_ref)
    tile_max = jnp.max(z, axis=1)
    max_ref[...] = tile_max
    sum_ref[...] = jnp.sum(jnp.exp(z - tile_max[:, None]), axis=1)


def _softmax_kernel(y_ref, g_ref, be_ref, mu_ref, var_ref, s_ref, max_ref, sum_ref, o_ref):
    part_max = max_ref[...]
    row_max = jnp.max(part_max, axis=1)
    row_sum = jnp.sum(sum_ref[...] * jnp.exp(part_max - row_max[:, None]), axis=1)
    z = _logits(y_ref[...], g_ref, be_ref, mu_ref, var_ref, s_ref)
    o_ref[...] = (jnp.exp(z - row_max[:, None]) / row_sum[:, None]).astype(o_ref.dtype)


def kernel(x, weight, bias, bn_scale, bn_bias, bn_mean, bn_var, scale):
    m, kd = x.shape
    n = weight.shape[1]
    bm, bn, bk = min(128, m), min(128, n), min(64, kd)
    nj = n // bn
    scale2 = scale.astype(jnp.float32).reshape(1, 1)
    vec = pl.BlockSpec((bn,), lambda i, j: (j,))
    scalar = pl.BlockSpec((1, 1), lambda i, j: (0, 0))
    part = pl.BlockSpec((bm, None), lambda i, j: (i, j))
    tile = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    y, part_max, part_sum = pl.pallas_call(
        functools.partial(_gemm_stats_kernel, bk=bk, nk=kd // bk),
        out_shape=(jax.ShapeDtypeStruct((m, n), jnp.float32),
                   jax.ShapeDtypeStruct((m, nj), jnp.float32),
                   jax.ShapeDtypeStruct((m, nj), jnp.float32)),
        grid=(m // bm, nj),
        in_specs=[
            pl.BlockSpec((bm, kd), lambda i, j: (i, 0)),
            pl.BlockSpec((kd, bn), lambda i, j: (0, j)),
            vec, vec, vec, vec, vec, scalar,
        ],
        out_specs=(tile, part, part),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, weight, bias, bn_scale, bn_bias, bn_mean, bn_var, scale2)

    rows = pl.BlockSpec((bm, nj), lambda i, j: (i, 0))
    return pl.pallas_call(
        _softmax_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, nj),
        in_specs=[tile, vec, vec, vec, vec, scalar, rows, rows],
        out_specs=tile,
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(y, bn_scale, bn_bias, bn_mean, bn_var, scale2, part_max, part_sum)
