"""Seed kernel for 42k_gemm_max_subtract_gelu (repaired) on NVIDIA GPUs (Pallas Triton backend).

out = gelu(rowmax(y) - rowmean(y)) with y = x @ W + b.

1. Grid (M/bm, N/bn): each program computes one (bm, bn) GEMM tile (K loop with a
   float32 register accumulator), adds the bias and writes the tile's row max and row
   sum to column j of two (M, N/bn) float32 partial arrays.
2. Grid (M/bm2,): each program reduces its rows' N/bn partials (N/bn must be a power of
   two, as Triton blocks are) and writes the exact GELU of max - sum / N.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _erf(v):
    """erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): Triton has no erf lowering."""
    a = jnp.abs(v)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    r = 1.0 - poly * jnp.exp(-a * a)
    return jnp.where(v < 0, -r, r)


def _partial_kernel(x_ref, w_ref, b_ref, max_ref, sum_ref, *, bk, nk):
    def body(step, acc):
        a = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(a, w, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, nk, body,
                            jnp.zeros((x_ref.shape[0], w_ref.shape[1]), jnp.float32))
    y = acc + b_ref[...].astype(jnp.float32)[None, :]
    max_ref[...] = jnp.max(y, axis=1)
    sum_ref[...] = jnp.sum(y, axis=1)


def _combine_kernel(max_ref, sum_ref, o_ref, *, n_total):
    d = jnp.max(max_ref[...], axis=1) - jnp.sum(sum_ref[...], axis=1) * (1.0 / n_total)
    o_ref[...] = (0.5 * d * (1.0 + _erf(d * 0.7071067811865476))).astype(o_ref.dtype)


def kernel(x, weight, bias):
    m, kd = x.shape
    n = weight.shape[1]
    bm, bn, bk = min(128, m), min(128, n), min(64, kd)
    nj = n // bn
    part = pl.BlockSpec((bm, None), lambda i, j: (i, j))
    row_max, row_sum = pl.pallas_call(
        functools.partial(_partial_kernel, bk=bk, nk=kd // bk),
        out_shape=(jax.ShapeDtypeStruct((m, nj), jnp.float32),
                   jax.ShapeDtypeStruct((m, nj), jnp.float32)),
        grid=(m // bm, nj),
        in_specs=[
            pl.BlockSpec((bm, kd), lambda i, j: (i, 0)),
            pl.BlockSpec((kd, bn), lambda i, j: (0, j)),
            pl.BlockSpec((bn,), lambda i, j: (j,)),
        ],
        out_specs=(part, part),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, weight, bias)

    bm2 = min(128, m)
    rows = pl.BlockSpec((bm2, nj), lambda i: (i, 0))
    out = pl.pallas_call(
        functools.partial(_combine_kernel, n_total=n),
        out_shape=jax.ShapeDtypeStruct((m,), x.dtype),
        grid=(m // bm2,),
        in_specs=[rows, rows],
        out_specs=pl.BlockSpec((bm2,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(row_max, row_sum)
    return out.reshape(m, 1)
