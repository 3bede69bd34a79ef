"""Seed kernel for 36k_matmul_sigmoid_sum on NVIDIA GPUs (Pallas Triton backend).

1. Grid (M/bm, N/bn): each program computes one (bm, bn) GEMM tile (K loop with a
   float32 register accumulator), adds the bias, applies the sigmoid and writes the
   tile's row sums to column j of an (M, N/bn) float32 partial-sum array.
2. Grid (M/bm2,): each program sums its rows' N/bn partials (N/bn must be a power of two,
   as Triton blocks are) and writes the result in the output dtype.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _partial_kernel(x_ref, w_ref, b_ref, p_ref, *, bk, nk):
    def body(step, acc):
        a = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(a, w, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, nk, body,
                            jnp.zeros((x_ref.shape[0], w_ref.shape[1]), jnp.float32))
    s = jax.nn.sigmoid(acc + b_ref[...].astype(jnp.float32)[None, :])
    p_ref[...] = jnp.sum(s, axis=1)


def _combine_kernel(p_ref, o_ref):
    o_ref[...] = jnp.sum(p_ref[...], axis=1).astype(o_ref.dtype)


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
    out = pl.pallas_call(
        _combine_kernel,
        out_shape=jax.ShapeDtypeStruct((m,), x.dtype),
        grid=(m // bm2,),
        in_specs=[pl.BlockSpec((bm2, nj), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((bm2,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(partial)
    return out.reshape(m, 1)
