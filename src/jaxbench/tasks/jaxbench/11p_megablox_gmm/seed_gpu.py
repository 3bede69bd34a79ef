"""Seed kernel for 11p_megablox_gmm on NVIDIA GPUs (Pallas Triton backend).

One program per (bm-row tile, bn-column tile). Integer glue gives each row tile
the first and last group its rows belong to; the program loops over those
groups (dynamic trip count), runs a K loop of bk-wide slices against that
group's expert matrix (float32 register accumulator, skipped for empty groups)
and keeps only the rows of that group. Each output tile is stored once, so
programs never race.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _gmm_kernel(offsets_ref, g0_ref, g1_ref, lhs_ref, rhs_ref, o_ref, *, bm, bn, bk, num_k):
    i = pl.program_id(0)
    j = pl.program_id(1)
    row0 = i * bm
    rows = row0 + jax.lax.broadcasted_iota(jnp.int32, (bm, bn), 0)

    def group_body(g, acc):
        start = offsets_ref[g]
        end = offsets_ref[g + 1]

        def k_body(kk, part):
            a = lhs_ref[pl.ds(row0, bm), pl.ds(kk * bk, bk)]
            b = rhs_ref[g, pl.ds(kk * bk, bk), pl.ds(j * bn, bn)]
            return part + jnp.dot(a, b, preferred_element_type=jnp.float32)

        # Arithmetic, not jnp.where: JAX 0.10's Triton lowering gives a scalar select an i1
        # result, and an i1 loop bound fails Triton IR verification on the GPU host.
        steps = num_k * (end > start).astype(jnp.int32)
        part = jax.lax.fori_loop(0, steps, k_body, jnp.zeros((bm, bn), jnp.float32))
        mine = jnp.logical_and(rows >= start, rows < end)
        return acc + jnp.where(mine, part, 0.0)

    acc = jax.lax.fori_loop(g0_ref[i], g1_ref[i] + 1, group_body,
                            jnp.zeros((bm, bn), jnp.float32))
    o_ref[...] = acc.astype(o_ref.dtype)


def kernel(lhs, rhs, group_sizes):
    m, k = lhs.shape
    e, _, n = rhs.shape
    bm, bn, bk = min(64, m), min(128, n), min(64, k)
    ends = jnp.cumsum(group_sizes.astype(jnp.int32))
    offsets = jnp.concatenate([jnp.zeros((1,), jnp.int32), ends])
    tile_rows = jnp.arange(m // bm, dtype=jnp.int32) * bm
    g0 = jnp.minimum(jnp.searchsorted(ends, tile_rows, side="right"), e - 1).astype(jnp.int32)
    g1 = jnp.minimum(jnp.searchsorted(ends, tile_rows + bm - 1, side="right"),
                     e - 1).astype(jnp.int32)
    whole = pl.no_block_spec
    return pl.pallas_call(
        functools.partial(_gmm_kernel, bm=bm, bn=bn, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m, n), lhs.dtype),
        grid=(m // bm, n // bn),
        in_specs=[whole, whole, whole, whole, whole],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(offsets, g0, g1, lhs, rhs)
