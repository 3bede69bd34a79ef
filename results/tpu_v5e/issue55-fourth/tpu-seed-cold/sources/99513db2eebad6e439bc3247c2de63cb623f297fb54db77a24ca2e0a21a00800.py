"""Seed kernel for 49k_matmul_avgpool_gelu_scale_max on TPU: matmul, window mean, GELU, x2, row max.

Grid (M/bm, N/bn, K/bk) with N and K sequential ("arbitrary"); bn is a multiple of the
16-wide pooling window, so every window lies inside one tile. At the last K step the
biased float32 tile is multiplied by a (bn, bn) block-diagonal averaging matrix (built
from iotas, float32 precision on the MXU), which puts each window's mean in all 16 of its
columns; GELU (exact) and the x2 scale follow, and the tile's row max is folded into a
(bm, 1) scratch that lives across N. The replicated columns do not change the max.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

POOL = 16
SCALE = 2.0


def _gelu(v):
    """Exact GELU through lax.erf (jax.nn.gelu's erfc form has no Mosaic lowering)."""
    return 0.5 * v * (1.0 + jax.lax.erf(v * 0.7071067811865476))


def _kernel(x_ref, w_ref, b_ref, o_ref, acc_ref, max_ref, *, bn):
    j, k = pl.program_id(1), pl.program_id(2)
    last_j, last_k = pl.num_programs(1) - 1, pl.num_programs(2) - 1

    @pl.when((j == 0) & (k == 0))
    def _init_max():
        max_ref[...] = jnp.full_like(max_ref, -jnp.inf)

    @pl.when(k == 0)
    def _init_acc():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == last_k)
    def _tile_max():
        y = acc_ref[...] + b_ref[...].astype(jnp.float32)
        shift = POOL.bit_length() - 1  # POOL is a power of two: i // POOL == i >> shift
        rows = jax.lax.shift_right_logical(jax.lax.broadcasted_iota(jnp.int32, (bn, bn), 0), shift)
        cols = jax.lax.shift_right_logical(jax.lax.broadcasted_iota(jnp.int32, (bn, bn), 1), shift)
        avg = jnp.where(rows == cols, 1.0 / POOL, 0.0).astype(jnp.float32)
        pooled = jnp.dot(y, avg, precision=jax.lax.Precision.HIGHEST,
                         preferred_element_type=jnp.float32)
        g = _gelu(pooled) * SCALE
        max_ref[...] = jnp.maximum(max_ref[...], jnp.max(g, axis=1, keepdims=True))

    @pl.when((j == last_j) & (k == last_k))
    def _store():
        o_ref[...] = max_ref[...].astype(o_ref.dtype)


def kernel(x, weight, bias):
    m, kd = x.shape
    n = weight.shape[1]
    bm, bn, bk = min(256, m), min(256, n), min(512, kd)
    out = pl.pallas_call(
        functools.partial(_kernel, bn=bn),
        out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype),
        grid=(m // bm, n // bn, kd // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32), pltpu.VMEM((bm, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary", "arbitrary")),
    )(x, weight, bias.reshape(1, n))
    return out.reshape(m)
