"""Seed kernel for 10p_sparse_moe on TPU: routed grouped matmuls (megablox style).

Routing is glue: router logits (float32, 2*T*D*E FLOPs, ~1e-4 of the task), top-2,
softmax of the two selected logits, then the 2T token-expert pairs are sorted by
expert and each expert's group is padded to a multiple of the row tile, so every
row tile belongs to exactly one expert (padding rows are zero, with weight 0).
A scalar-prefetched tile -> expert table steers the weight BlockSpecs:

1. up kernel, grid (tiles, F/tf, D/tk): gate and up projections of a row tile with
   two float32 VMEM accumulators; h = silu(gate) * up at the last D step.
2. down kernel, grid (tiles, D/tn, F/tk): h @ down_k[e], scaled by each row's
   routing weight at the last F step.

Each token's two expert outputs are then gathered back and summed (glue).
"""


import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
TOP_K = 2


def _route(tokens, router, tm):
    """Sorted, expert-padded rows: (rows, row weights, tile -> expert, pair -> row)."""
    num_tokens, d = tokens.shape
    num_experts = router.shape[1]
    num_pairs = num_tokens * TOP_K
    logits = jnp.matmul(tokens, router, preferred_element_type=jnp.float32)
    top_logits, top_experts = jax.lax.top_k(logits, TOP_K)
    weights = jax.nn.softmax(top_logits, axis=-1).reshape(-1)
    experts = top_experts.reshape(-1).astype(jnp.int32)
    sizes = jnp.bincount(experts, length=num_experts).astype(jnp.int32)
    padded = (sizes + tm - 1) // tm * tm
    padded_end = jnp.cumsum(padded)
    padded_start = padded_end - padded
    group_start = jnp.cumsum(sizes) - sizes
    order = jnp.argsort(experts, stable=True)
    rank = jnp.zeros((num_pairs,), jnp.int32).at[order].set(jnp.arange(num_pairs, dtype=jnp.int32))
    row_of_pair = padded_start[experts] + rank - group_start[experts]
    num_rows = num_pairs + num_experts * tm
    rows = jnp.zeros((num_rows, d), tokens.dtype).at[row_of_pair].set(
        jnp.repeat(tokens, TOP_K, axis=0))
    row_weight = jnp.zeros((num_rows, 1), jnp.float32).at[row_of_pair, 0].set(weights)
    tile_start = jnp.arange(num_rows // tm, dtype=jnp.int32) * tm
    tile_expert = jnp.minimum(jnp.searchsorted(padded_end, tile_start, side="right"),
                              num_experts - 1).astype(jnp.int32)
    return rows, row_weight, tile_expert, row_of_pair


def _up_kernel(tile_expert_ref, x_ref, gate_ref, up_ref, h_ref, gate_acc, up_acc):
    del tile_expert_ref
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        gate_acc[...] = jnp.zeros_like(gate_acc)
        up_acc[...] = jnp.zeros_like(up_acc)

    x = x_ref[...]
    gate_acc[...] += jnp.dot(x, gate_ref[...], preferred_element_type=jnp.float32)
    up_acc[...] += jnp.dot(x, up_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        h_ref[...] = (jax.nn.silu(gate_acc[...]) * up_acc[...]).astype(h_ref.dtype)


def _down_kernel(tile_expert_ref, h_ref, down_ref, w_ref, y_ref, acc):
    del tile_expert_ref
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc[...] = jnp.zeros_like(acc)

    acc[...] += jnp.dot(h_ref[...], down_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        y_ref[...] = (acc[...] * w_ref[...]).astype(y_ref.dtype)


def kernel(x, router, gate_k, up_k, down_k):
    b, s, d = x.shape
    f = gate_k.shape[2]
    num_tokens = b * s
    tm = 256 if num_tokens >= 4096 else 128
    tf, tk, tn = min(512, f), min(512, d), min(512, d)
    rows, row_weight, tile_expert, row_of_pair = _route(x.reshape(num_tokens, d), router, tm)
    num_rows = rows.shape[0]
    num_tiles = num_rows // tm
    params = pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary"))

    h = pl.pallas_call(
        _up_kernel,
        out_shape=jax.ShapeDtypeStruct((num_rows, f), x.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(num_tiles, f // tf, d // tk),
            in_specs=[
                pl.BlockSpec((tm, tk), lambda t, j, k, te: (t, k)),
                pl.BlockSpec((None, tk, tf), lambda t, j, k, te: (te[t], k, j)),
                pl.BlockSpec((None, tk, tf), lambda t, j, k, te: (te[t], k, j)),
            ],
            out_specs=pl.BlockSpec((tm, tf), lambda t, j, k, te: (t, j)),
            scratch_shapes=[pltpu.VMEM((tm, tf), jnp.float32), pltpu.VMEM((tm, tf), jnp.float32)],
        ),
        compiler_params=params,
    )(tile_expert, rows, gate_k, up_k)

    tkf = min(512, f)
    y = pl.pallas_call(
        _down_kernel,
        out_shape=jax.ShapeDtypeStruct((num_rows, d), x.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(num_tiles, d // tn, f // tkf),
            in_specs=[
                pl.BlockSpec((tm, tkf), lambda t, j, k, te: (t, k)),
                pl.BlockSpec((None, tkf, tn), lambda t, j, k, te: (te[t], k, j)),
                pl.BlockSpec((tm, 1), lambda t, j, k, te: (t, 0)),
            ],
            out_specs=pl.BlockSpec((tm, tn), lambda t, j, k, te: (t, j)),
            scratch_shapes=[pltpu.VMEM((tm, tn), jnp.float32)],
        ),
        compiler_params=params,
    )(tile_expert, h, down_k, row_weight)

    out = y[row_of_pair].astype(jnp.float32).reshape(num_tokens, TOP_K, d).sum(axis=1)
    return out.astype(x.dtype).reshape(b, s, d)
