"""Seed kernel for 8p_gemm on NVIDIA Hopper GPUs (Pallas Mosaic GPU, ``plgpu.kernel``).

One thread block (one warpgroup) per (bm, bn) output tile; blocks are numbered in groups of
_GROUP_M tile rows so that blocks resident at the same time share A and B panels in L2.
Each block runs a ``plgpu.emit_pipeline`` over K: TMA copies keep up to _STAGES (bm, bk) A
and (bk, bn) B tiles in flight in shared memory, stored tiled and 128-byte swizzled (the
layout wgmma reads). Every step issues one asynchronous warpgroup MMA (wgmma) into a float32
accumulator held in registers and waits only for the previous step's MMA, so the tensor
cores never idle on the wait; a slot is refilled one step late (``delay_release=1``) for
that reason. The epilogue casts the accumulator to bf16 in shared memory and TMA-stores it.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

TARGET = "gpu"

_BM, _BN, _BK = 128, 128, 64
_STAGES = 4  # K steps of A and B tiles in flight
_GROUP_M = 8  # tile rows per group of the block order (L2 reuse)


def _tile_transforms(minor_elems, dtype):
    item = jnp.dtype(dtype).itemsize
    swizzle = plgpu.find_swizzle(minor_elems * item * 8)
    return (plgpu.TilingTransform((8, swizzle // item)), plgpu.SwizzleTransform(swizzle))


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = min(_BM, m), min(_BN, n), min(_BK, k)
    m_tiles, n_tiles, k_steps = m // bm, n // bn, k // bk
    group_m = next(g for g in (_GROUP_M, 4, 2, 1) if m_tiles % g == 0)
    in_transforms = _tile_transforms(bk, a.dtype)
    out_transforms = _tile_transforms(bn, a.dtype)

    def body(a_gmem, b_gmem, o_gmem, o_smem):
        # Block t -> (tile row, tile column): group_m tile rows are walked column by column.
        t = lax.axis_index("tiles")
        per_group = group_m * n_tiles
        group, within = lax.div(t, per_group), lax.rem(t, per_group)
        mi = group * group_m + lax.rem(within, group_m)
        ni = lax.div(within, group_m)
        rows, cols = pl.ds(mi * bm, bm), pl.ds(ni * bn, bn)

        def accumulate(acc_ref):
            def step(_, a_smem, b_smem):
                plgpu.wgmma(acc_ref, a_smem, b_smem)
                plgpu.wgmma_wait(1)  # the previous step's MMA is done: its slot can refill

            plgpu.emit_pipeline(
                step,
                grid=(k_steps,),
                in_specs=[
                    plgpu.BlockSpec((bm, bk), lambda kk: (0, kk), transforms=in_transforms,
                                    delay_release=1),
                    plgpu.BlockSpec((bk, bn), lambda kk: (kk, 0), transforms=in_transforms,
                                    delay_release=1),
                ],
                max_concurrent_steps=max(2, min(_STAGES, k_steps)),
            )(a_gmem.at[rows, :], b_gmem.at[:, cols])
            plgpu.wgmma_wait(0)
            return acc_ref[...]

        acc = pl.run_scoped(accumulate, plgpu.ACC((bm, bn), jnp.float32))
        o_smem[...] = acc.astype(o_smem.dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(o_smem, o_gmem.at[rows, cols])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_types=[plgpu.SMEM((bm, bn), a.dtype, transforms=out_transforms)],
        grid=(m_tiles * n_tiles,),
        grid_names=("tiles",),
    )(a, b)
