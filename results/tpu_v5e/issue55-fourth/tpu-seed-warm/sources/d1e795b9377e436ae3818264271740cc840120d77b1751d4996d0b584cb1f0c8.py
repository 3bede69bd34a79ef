"""Seed kernel for 42k_gemm_max_subtract_gelu (repaired) on TPU: gelu(rowmax(y) - rowmean(y)).

Grid (M/bm, N/bn, K/bk) with N and K sequential ("arbitrary"): a float32 VMEM tile
accumulator fills over K; at the last K step the biased tile's row max and row sum are
folded into (bm, 1) float32 scratches that live across the N axis. After the last N tile
the exact GELU of max - sum / N is written to the resident (bm, 1) output block.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _gelu(v):
    """Exact GELU through lax.erf (jax.nn.gelu's erfc form has no Mosaic lowering)."""
    return 0.5 * v * (1.0 + jax.lax.erf(v * 0.7071067811865476))


def _kernel(x_ref, w_ref, b_ref, o_ref, acc_ref, max_ref, sum_ref, *, n_total):
    j, k = pl.program_id(1), pl.program_id(2)
    last_j, last_k = pl.num_programs(1) - 1, pl.num_programs(2) - 1

    @pl.when((j == 0) & (k == 0))
    def _init_stats():
        max_ref[...] = jnp.full_like(max_ref, -jnp.inf)
        sum_ref[...] = jnp.zeros_like(sum_ref)

    @pl.when(k == 0)
    def _init_acc():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == last_k)
    def _tile_stats():
        y = acc_ref[...] + b_ref[...].astype(jnp.float32)
        max_ref[...] = jnp.maximum(max_ref[...], jnp.max(y, axis=1, keepdims=True))
        sum_ref[...] += jnp.sum(y, axis=1, keepdims=True)

    @pl.when((j == last_j) & (k == last_k))
    def _store():
        d = max_ref[...] - sum_ref[...] * (1.0 / n_total)
        o_ref[...] = _gelu(d).astype(o_ref.dtype)


def kernel(x, weight, bias):
    m, kd = x.shape
    n = weight.shape[1]
    bm, bn, bk = min(256, m), min(256, n), min(512, kd)
    return pl.pallas_call(
        functools.partial(_kernel, n_total=n),
        out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype),
        grid=(m // bm, n // bn, kd // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32), pltpu.VMEM((bm, 1), jnp.float32),
                        pltpu.VMEM((bm, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary", "arbitrary")),
    )(x, weight, bias.reshape(1, n))
