"""Seed kernel for 49k_matmul_avgpool_gelu_scale_max on NVIDIA GPUs (Pallas Triton backend).

1. Grid (M/bm, N/bn), bn a multiple of the 16-wide pooling window: each program computes
   one (bm, bn) GEMM tile (K loop with a float32 register accumulator), adds the bias,
   averages each window (reshape to (bm, bn/16, 16) and mean), applies the exact GELU and
   the x2 scale, and writes the tile's row max to column j of an (M, N/bn) float32
   partial array.
2. Grid (M/bm2,): each program takes the max of its rows' N/bn partials (N/bn must be a
   power of two, as Triton blocks are) and writes it in the output dtype.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

POOL = 16
SCALE = 2.0


def _erf(v):
    """erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): Triton has no erf lowering."""
    a = jnp.abs(v)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    r = 1.0 - poly * jnp.exp(-a * a)
    return jnp.where(v < 0, -r, r)


def _partial_kernel(x_ref, w_ref, b_ref, p_ref, *, bk, nk):
    bm, bn = x_ref.shape[0], w_ref.shape[1]

    def body(step, acc):
        a = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(a, w, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, nk, body, jnp.zeros((bm, bn), jnp.float32))
    y = acc + b_ref[...].astype(jnp.float32)[None, :]
    pooled = jnp.mean(y.reshape(bm, bn // POOL, POOL), axis=2)
    g = 0.5 * pooled * (1.0 + _erf(pooled * 0.7071067811865476)) * SCALE
    p_ref[...] = jnp.max(g, axis=1)


def _combine_kernel(p_ref, o_ref):
    o_ref[...] = jnp.max(p_ref[...], axis=1).astype(o_ref.dtype)


def kernel(x, weight, bias):
    m, kd = x.shape
    n = weight.shape[1]
    bm, bn, bk = min(128, m), min(128, n), min(64, kd)
    nj = n // bn
    partial = pl.pallas_call(
        functools.partial(_partial_kernel, bk=bk, nk=kd // bk),
        out_shape=jax.ShapeDtypeStruct((m, nj), jnp.float32),
        grid=(m // bm, nj),
        in_specs=[
            pl.BlockSpec((bm, kd), lambda i, j: (i, 0)),
            pl.BlockSpec((kd, bn), lambda i, j: (0, j)),
            pl.BlockSpec((bn,), lambda i, j: (j,)),
        ],
        out_specs=pl.BlockSpec((bm, None), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, weight, bias)

    bm2 = min(128, m)
    return pl.pallas_call(
        _combine_kernel,
        out_shape=jax.ShapeDtypeStruct((m,), x.dtype),
        grid=(m // bm2,),
        in_specs=[pl.BlockSpec((bm2, nj), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((bm2,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(partial)
