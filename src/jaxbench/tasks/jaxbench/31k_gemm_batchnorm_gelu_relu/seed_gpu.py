"""Seed kernel for 31k_gemm_batchnorm_gelu_relu on NVIDIA GPUs (Pallas Triton backend).

Batch-norm statistics need every row of a feature, so two pallas_calls:
1. a tiled ``h = x @ W^T`` (W in (out, in) layout; K loop with a float32 register
   accumulator) that writes its tile of h (bf16) and the tile's per-feature partial sum
   and sum of squares (float32) into (M/bm, N) partial-statistics arrays;
2. an elementwise pass: the tiny (M/bm, N) -> (N,) reductions happen outside; each tile
   computes the batch mean and biased variance from the sums, normalises, applies
   bn_weight / bn_bias, adds the linear bias (after the norm), exact GELU and ReLU. Triton
   has no erf, so erf uses the Abramowitz-Stegun 7.1.26 rational approximation (absolute
   error < 1.5e-7).
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NT = (((1,), (1,)), ((), ()))  # contract the K axis of x (bm, bk) with that of W (bn, bk)


def _erf(v):
    a = jnp.abs(v)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                                                        + t * (-1.453152027 + t * 1.061405429))))
    e = 1.0 - poly * jnp.exp(-a * a)
    return jnp.where(v < 0, -e, e)


def _linear_stats_kernel(x_ref, w_ref, h_ref, s_ref, ss_ref, *, bk, num_k):
    def body(step, acc):
        x = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[:, pl.ds(step * bk, bk)]
        return acc + jax.lax.dot_general(x, w, _NT, preferred_element_type=jnp.float32)

    h = jax.lax.fori_loop(0, num_k, body, jnp.zeros(h_ref.shape, jnp.float32))
    h_ref[...] = h.astype(h_ref.dtype)
    s_ref[...] = jnp.sum(h, axis=0, keepdims=True)
    ss_ref[...] = jnp.sum(h * h, axis=0, keepdims=True)


def _bn_gelu_relu_kernel(h_ref, s_ref, ss_ref, g_ref, beta_ref, b_ref, o_ref, *, count):
    h = h_ref[...].astype(jnp.float32)
    mean = s_ref[...] / count
    var = jnp.maximum(ss_ref[...] / count - mean * mean, 0.0)
    scale = jax.lax.rsqrt(var + 1e-5) * g_ref[...].astype(jnp.float32)
    shift = beta_ref[...].astype(jnp.float32) + b_ref[...].astype(jnp.float32)
    v = (h - mean[None, :]) * scale[None, :] + shift[None, :]
    gelu = 0.5 * v * (1.0 + _erf(v * (1.0 / math.sqrt(2.0))))
    o_ref[...] = jnp.maximum(gelu, 0.0).astype(o_ref.dtype)


def kernel(x, w, b, bn_weight, bn_bias):
    m, k = x.shape
    n = w.shape[0]
    bm, bn, bk = min(128, m), min(128, n), min(64, k)
    h, psum, psumsq = pl.pallas_call(
        functools.partial(_linear_stats_kernel, bk=bk, num_k=k // bk),
        out_shape=(jax.ShapeDtypeStruct((m, n), x.dtype),
                   jax.ShapeDtypeStruct((m // bm, n), jnp.float32),
                   jax.ShapeDtypeStruct((m // bm, n), jnp.float32)),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((bn, k), lambda i, j: (j, 0)),
        ],
        out_specs=(pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
                   pl.BlockSpec((1, bn), lambda i, j: (i, j)),
                   pl.BlockSpec((1, bn), lambda i, j: (i, j))),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, w)
    col_sum, col_sumsq = jnp.sum(psum, axis=0), jnp.sum(psumsq, axis=0)
    em, en = min(64, m), min(128, n)
    col = pl.BlockSpec((en,), lambda i, j: (j,))
    return pl.pallas_call(
        functools.partial(_bn_gelu_relu_kernel, count=float(m)),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // em, n // en),
        in_specs=[pl.BlockSpec((em, en), lambda i, j: (i, j)), col, col, col, col, col],
        out_specs=pl.BlockSpec((em, en), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(h, col_sum, col_sumsq, bn_weight, bn_bias, b)
