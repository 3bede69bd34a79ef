"""Seed kernel for 31k_gemm_batchnorm_gelu_relu on TPU.

Batch-norm statistics need every row of a feature, so two pallas_calls:
1. a tiled ``h = x @ W^T`` (W in (out, in) layout) with a float32 VMEM accumulator
   over an "arbitrary" K axis; on the last K step it writes the tile of h (bf16) and the
   tile's per-feature partial sum and sum of squares (float32) into a
   (M/bm, 2, N) partial-statistics array;
2. an elementwise pass: the tiny (M/bm, 2, N) -> (2, N) reduction happens outside; each
   tile computes the batch mean and biased variance from the sums, normalises, applies
   bn_weight / bn_bias, adds the linear bias (after the norm), exact (erf) GELU and ReLU.
"""

import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NT = (((1,), (1,)), ((), ()))  # contract the K axis of x (bm, bk) with that of W (bn, bk)


def _linear_stats_kernel(x_ref, w_ref, h_ref, st_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        h = acc_ref[...]
        h_ref[...] = h.astype(h_ref.dtype)
        st_ref[0, 0:1, :] = jnp.sum(h, axis=0, keepdims=True)
        st_ref[0, 1:2, :] = jnp.sum(h * h, axis=0, keepdims=True)


def _bn_gelu_relu_kernel(h_ref, st_ref, g_ref, beta_ref, b_ref, o_ref, *, count):
    h = h_ref[...].astype(jnp.float32)
    mean = st_ref[0:1, :] / count
    var = jnp.maximum(st_ref[1:2, :] / count - mean * mean, 0.0)
    v = (h - mean) * jax.lax.rsqrt(var + 1e-5) * g_ref[...].astype(jnp.float32) \
        + beta_ref[...].astype(jnp.float32) + b_ref[...].astype(jnp.float32)
    gelu = 0.5 * v * (1.0 + jax.lax.erf(v * (1.0 / math.sqrt(2.0))))
    o_ref[...] = jnp.maximum(gelu, 0.0).astype(o_ref.dtype)


def kernel(x, w, b, bn_weight, bn_bias):
    m, k = x.shape
    n = w.shape[0]
    bm, bn, bk = min(256, m), min(256, n), min(256, k)
    h, partial = pl.pallas_call(
        _linear_stats_kernel,
        out_shape=(jax.ShapeDtypeStruct((m, n), x.dtype),
                   jax.ShapeDtypeStruct((m // bm, 2, n), jnp.float32)),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk)),
        ],
        out_specs=(pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
                   pl.BlockSpec((1, 2, bn), lambda i, j, kk: (i, 0, j))),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, w)
    stats = jnp.sum(partial, axis=0)  # (2, N): per-feature sum and sum of squares
    em, en = min(256, m), min(512, n)
    return pl.pallas_call(
        lambda *refs: _bn_gelu_relu_kernel(*refs, count=float(m)),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // em, n // en),
        in_specs=[
            pl.BlockSpec((em, en), lambda i, j: (i, j)),
            pl.BlockSpec((2, en), lambda i, j: (0, j)),
            pl.BlockSpec((1, en), lambda i, j: (0, j)),
            pl.BlockSpec((1, en), lambda i, j: (0, j)),
            pl.BlockSpec((1, en), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((em, en), lambda i, j: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(h, stats, bn_weight.reshape(1, n), bn_bias.reshape(1, n), b.reshape(1, n))
