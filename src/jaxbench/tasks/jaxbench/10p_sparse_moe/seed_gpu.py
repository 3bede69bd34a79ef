"""Seed kernel for 10p_sparse_moe on NVIDIA GPUs (Pallas Triton backend): routed grouped matmuls.

Routing is glue: router logits (float32, 2*T*D*E FLOPs, ~1e-4 of the task), top-2,
softmax of the two selected logits, then the 2T token-expert pairs are sorted by
expert and each expert's group is padded to a multiple of the row tile, so every
row tile belongs to exactly one expert (padding rows are zero, with weight 0).
Triton has no scalar prefetch, so each program reads its tile's expert id from a
small table and indexes the expert weights (passed whole) with it:

1. up kernel, grid (tiles, F/bf): gate and up projections of a row tile, looping
   over D with two float32 register accumulators; h = silu(gate) * up.
2. down kernel, grid (tiles, D/bn): h @ down_k[e] looping over F, scaled by each
   row's routing weight.

Each token's two expert outputs are then gathered back and summed (glue).
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
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


def _up_kernel(tile_expert_ref, x_ref, gate_ref, up_ref, h_ref, *, bk, num_k):
    expert = tile_expert_ref[...]
    cols = pl.ds(pl.program_id(1) * h_ref.shape[1], h_ref.shape[1])

    def body(step, carry):
        gate_acc, up_acc = carry
        x = x_ref[:, pl.ds(step * bk, bk)]
        gate = gate_ref[expert, pl.ds(step * bk, bk), cols]
        up = up_ref[expert, pl.ds(step * bk, bk), cols]
        gate_acc = gate_acc + jnp.dot(x, gate, preferred_element_type=jnp.float32)
        up_acc = up_acc + jnp.dot(x, up, preferred_element_type=jnp.float32)
        return gate_acc, up_acc

    zeros = jnp.zeros(h_ref.shape, jnp.float32)
    gate_acc, up_acc = jax.lax.fori_loop(0, num_k, body, (zeros, zeros))
    h_ref[...] = (jax.nn.silu(gate_acc) * up_acc).astype(h_ref.dtype)


def _down_kernel(tile_expert_ref, h_ref, down_ref, w_ref, y_ref, *, bk, num_k):
    expert = tile_expert_ref[...]
    cols = pl.ds(pl.program_id(1) * y_ref.shape[1], y_ref.shape[1])

    def body(step, acc):
        h = h_ref[:, pl.ds(step * bk, bk)]
        down = down_ref[expert, pl.ds(step * bk, bk), cols]
        return acc + jnp.dot(h, down, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(y_ref.shape, jnp.float32))
    y_ref[...] = (acc * w_ref[...][:, None]).astype(y_ref.dtype)


def kernel(x, router, gate_k, up_k, down_k):
    b, s, d = x.shape
    num_experts, _, f = gate_k.shape
    num_tokens = b * s
    bm, bf, bn, bk = 64, min(128, f), min(128, d), 32
    rows, row_weight, tile_expert, row_of_pair = _route(x.reshape(num_tokens, d), router, bm)
    num_rows = rows.shape[0]
    num_tiles = num_rows // bm
    expert_spec = pl.BlockSpec((None,), lambda t, j: (t,))

    h = pl.pallas_call(
        functools.partial(_up_kernel, bk=bk, num_k=d // bk),
        out_shape=jax.ShapeDtypeStruct((num_rows, f), x.dtype),
        grid=(num_tiles, f // bf),
        in_specs=[
            expert_spec,
            pl.BlockSpec((bm, d), lambda t, j: (t, 0)),
            pl.BlockSpec((num_experts, d, f), lambda t, j: (0, 0, 0)),
            pl.BlockSpec((num_experts, d, f), lambda t, j: (0, 0, 0)),
        ],
        out_specs=pl.BlockSpec((bm, bf), lambda t, j: (t, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(tile_expert, rows, gate_k, up_k)

    y = pl.pallas_call(
        functools.partial(_down_kernel, bk=bk, num_k=f // bk),
        out_shape=jax.ShapeDtypeStruct((num_rows, d), x.dtype),
        grid=(num_tiles, d // bn),
        in_specs=[
            expert_spec,
            pl.BlockSpec((bm, f), lambda t, j: (t, 0)),
            pl.BlockSpec((num_experts, f, d), lambda t, j: (0, 0, 0)),
            pl.BlockSpec((bm,), lambda t, j: (t,)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda t, j: (t, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(tile_expert, h, down_k, row_weight.reshape(num_rows))

    out = y[row_of_pair].astype(jnp.float32).reshape(num_tokens, TOP_K, d).sum(axis=1)
    return out.astype(x.dtype).reshape(b, s, d)
