"""Seed kernel for 45k_gemm_groupnorm_swish_multiply_swish on TPU: matmul with a fused GroupNorm epilogue.

Grid (M/bm, N/bn, K/bk), K innermost and sequential ("arbitrary"), float32 VMEM
accumulator; the weight is in PyTorch (N, K) layout, so each step contracts the K axes
of an x tile and a weight tile (x @ W^T). bn is a multiple of the 32-feature group, so a
tile holds whole groups: at the last K step the group mean and variance are broadcast to
every column by multiplying with a (bn, bn) block-diagonal averaging matrix (built from
iotas, float32 precision on the MXU); then the affine, swish, x multiply_weight and swish
run on the float32 tile, stored once in the output dtype.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

GROUP_SIZE = 32
EPS = 1e-5
_NT = (((1,), (1,)), ((), ()))  # contract the last axis of both operands: a @ b^T


def _swish(v):
    return v * jax.nn.sigmoid(v)


def _kernel(x_ref, w_ref, b_ref, gw_ref, gb_ref, mw_ref, o_ref, acc_ref, *, bn):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        f32 = jnp.float32
        y = acc_ref[...] + b_ref[...].astype(f32)
        shift = GROUP_SIZE.bit_length() - 1  # GROUP_SIZE is a power of two
        rows = jax.lax.shift_right_logical(jax.lax.broadcasted_iota(jnp.int32, (bn, bn), 0), shift)
        cols = jax.lax.shift_right_logical(jax.lax.broadcasted_iota(jnp.int32, (bn, bn), 1), shift)
        avg = jnp.where(rows == cols, 1.0 / GROUP_SIZE, 0.0).astype(f32)
        hi = jax.lax.Precision.HIGHEST
        mean = jnp.dot(y, avg, precision=hi, preferred_element_type=f32)
        d = y - mean
        var = jnp.dot(d * d, avg, precision=hi, preferred_element_type=f32)
        z = d * jax.lax.rsqrt(var + EPS) * gw_ref[...].astype(f32) + gb_ref[...].astype(f32)
        o_ref[...] = _swish(_swish(z) * mw_ref[...].astype(f32)).astype(o_ref.dtype)


def kernel(x, weight, bias, gn_weight, gn_bias, multiply_weight):
    m, kd = x.shape
    n = weight.shape[0]
    bm, bn, bk = min(256, m), min(256, n), min(512, kd)
    vec = pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))
    return pl.pallas_call(
        functools.partial(_kernel, bn=bn),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, kd // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk)),
            vec, vec, vec, vec,
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, weight, bias.reshape(1, n), gn_weight.reshape(1, n), gn_bias.reshape(1, n),
      multiply_weight.reshape(1, n))
