"""Seed kernel for 11p_megablox_gmm on TPU: a grouped matmul over a work list.

Rows are cut into bm-row tiles. Because the groups are uneven, a tile can hold
rows of several groups (and a group can span several tiles), so cheap integer
glue builds a work list of (row tile, group) items in row order, at most
M/bm + E items, padded with inert copies of the last one. The item arrays are
scalar-prefetched and steer the BlockSpec index maps: item w reads lhs tile
tile[w] and rhs[group[w]]. Grid (N/bn, items, K/bk): for each item the K axis
accumulates into a float32 VMEM tile, keeping only the rows of the item's group;
the accumulator lives across the consecutive items of one tile and is written
out after the tile's last item. Empty groups produce no items.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _work_list(group_sizes, m, bm, num_items):
    e = group_sizes.shape[0]
    sizes = group_sizes.astype(jnp.int32)
    ends = jnp.cumsum(sizes)
    offsets = jnp.concatenate([jnp.zeros((1,), jnp.int32), ends])
    first_tile = offsets[:-1] // bm
    last_tile = (jnp.maximum(ends, 1) - 1) // bm
    counts = jnp.where(sizes > 0, last_tile - first_tile + 1, 0)
    cum = jnp.cumsum(counts)
    total = cum[-1]
    w = jnp.arange(num_items, dtype=jnp.int32)
    w_eff = jnp.minimum(w, total - 1)            # padding items repeat the last real one
    group = jnp.minimum(jnp.searchsorted(cum, w_eff, side="right"), e - 1).astype(jnp.int32)
    tile = first_tile[group] + (w_eff - (cum[group] - counts[group]))
    tile = jnp.clip(tile, 0, m // bm - 1).astype(jnp.int32)
    valid = (w < total).astype(jnp.int32)
    first = jnp.concatenate([jnp.ones((1,), bool), tile[1:] != tile[:-1]]).astype(jnp.int32)
    last = jnp.concatenate([tile[1:] != tile[:-1], jnp.ones((1,), bool)]).astype(jnp.int32)
    return offsets, tile, group, valid, first, last


def _gmm_kernel(offsets_ref, tile_ref, group_ref, valid_ref, first_ref, last_ref,
                lhs_ref, rhs_ref, o_ref, acc_ref, *, bm):
    w = pl.program_id(1)
    k = pl.program_id(2)

    @pl.when(jnp.logical_and(first_ref[w] == 1, k == 0))
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    @pl.when(valid_ref[w] == 1)
    def _accumulate():
        g = group_ref[w]
        part = jnp.dot(lhs_ref[...], rhs_ref[...], preferred_element_type=jnp.float32)
        rows = tile_ref[w] * bm + jax.lax.broadcasted_iota(jnp.int32, part.shape, 0)
        mine = jnp.logical_and(rows >= offsets_ref[g], rows < offsets_ref[g + 1])
        acc_ref[...] += jnp.where(mine, part, 0.0)

    @pl.when(jnp.logical_and(last_ref[w] == 1, k == pl.num_programs(2) - 1))
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def kernel(lhs, rhs, group_sizes):
    m, k = lhs.shape
    e, _, n = rhs.shape
    bm, bn, bk = min(512, m), min(512, n), min(512, k)
    num_items = m // bm + e
    prefetch = _work_list(group_sizes, m, bm, num_items)
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=len(prefetch),
        grid=(n // bn, num_items, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda j, w, kk, off, tile, grp, *_: (tile[w], kk)),
            pl.BlockSpec((None, bk, bn), lambda j, w, kk, off, tile, grp, *_: (grp[w], kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda j, w, kk, off, tile, grp, *_: (tile[w], j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
    )
    return pl.pallas_call(
        functools.partial(_gmm_kernel, bm=bm),
        out_shape=jax.ShapeDtypeStruct((m, n), lhs.dtype),
        grid_spec=grid_spec,
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary", "arbitrary")),
    )(*prefetch, lhs, rhs)
