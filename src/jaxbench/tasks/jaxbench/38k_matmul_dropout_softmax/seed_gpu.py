"""Seed kernel for 38k_matmul_dropout_softmax on NVIDIA GPUs (Pallas Triton backend).

1. Grid (M/bm, N/bn): each program computes one (bm, bn) tile of the logits (K loop with
   a float32 register accumulator; the weight is in PyTorch (N, K) layout, x @ W^T),
   adds the bias, stores the logits rounded to the input dtype, and writes the tile's
   row max and row sum of exp(z - tile max) to column j of two (M, N/bn) float32
   partial arrays.
2. Grid (M/bm, N/bn): each program merges its rows' partials into the row max and the
   row sum of exp (N/bn must be a power of two, as Triton blocks are) and writes
   exp(z - max) / sum for its tile.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NT = (((1,), (1,)), ((), ()))  # contract the last axis of both operands: a @ b^T


def _logits_kernel(x_ref, w_ref, b_ref, z_ref, max_ref, sum_ref, *, bk, nk):
    bm, bn = z_ref.shape
    f32 = jnp.float32

    def body(step, acc):
        a = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[:, pl.ds(step * bk, bk)]
        return acc + jax.lax.dot_general(a, w, _NT, preferred_element_type=f32)

    acc = jax.lax.fori_loop(0, nk, body, jnp.zeros((bm, bn), f32))
    z = (acc + b_ref[...].astype(f32)[None, :]).astype(z_ref.dtype)
    z_ref[...] = z
    z = z.astype(f32)
    tile_max = jnp.max(z, axis=1)
    max_ref[...] = tile_max
    sum_ref[...] = jnp.sum(jnp.exp(z - tile_max[:, None]), axis=1)


def _normalize_kernel(z_ref, max_ref, sum_ref, o_ref):
    part_max = max_ref[...]
    row_max = jnp.max(part_max, axis=1)
    row_sum = jnp.sum(sum_ref[...] * jnp.exp(part_max - row_max[:, None]), axis=1)
    p = jnp.exp(z_ref[...].astype(jnp.float32) - row_max[:, None])
    o_ref[...] = (p / row_sum[:, None]).astype(o_ref.dtype)


def kernel(x, weight, bias):
    m, kd = x.shape
    n = weight.shape[0]
    bm, bn, bk = min(128, m), min(128, n), min(64, kd)
    nj = n // bn
    part = pl.BlockSpec((bm, None), lambda i, j: (i, j))
    tile = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    z, part_max, part_sum = pl.pallas_call(
        functools.partial(_logits_kernel, bk=bk, nk=kd // bk),
        out_shape=(jax.ShapeDtypeStruct((m, n), x.dtype),
                   jax.ShapeDtypeStruct((m, nj), jnp.float32),
                   jax.ShapeDtypeStruct((m, nj), jnp.float32)),
        grid=(m // bm, nj),
        in_specs=[
            pl.BlockSpec((bm, kd), lambda i, j: (i, 0)),
            pl.BlockSpec((bn, kd), lambda i, j: (j, 0)),
            pl.BlockSpec((bn,), lambda i, j: (j,)),
        ],
        out_specs=(tile, part, part),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, weight, bias)

    rows = pl.BlockSpec((bm, nj), lambda i, j: (i, 0))
    return pl.pallas_call(
        _normalize_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, nj),
        in_specs=[tile, rows, rows],
        out_specs=tile,
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(z, part_max, part_sum)
