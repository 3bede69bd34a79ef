"""Seed kernel for 1p_flash_attention on NVIDIA Hopper GPUs (Pallas Mosaic GPU, ``plgpu.kernel``).

One thread block (one warpgroup) per (query block of 64 rows, batch x head); the heaviest
causal query blocks of a head are launched first. The query tile is copied once into
shared memory by TMA; ``plgpu.emit_pipeline`` then streams the K and V tiles of the key
blocks at or before the diagonal (a trip count that depends on the block) through two
shared-memory slots, so the copy of the next block overlaps the current one. Per key block,
s = q kᵀ is a warpgroup MMA (wgmma) into float32 registers, the causal mask is applied,
and the online softmax (base-2 exponentials, scale folded in) updates the running row max,
row sum and float32 output accumulator, which are the pipeline's register carry; p v is a
second wgmma that takes p from registers and accumulates in place into the rescaled output
accumulator. Finally the accumulator is divided by the row sum, cast, staged in the query
tile's shared memory and TMA-stored.
"""

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

TARGET = "gpu"

_BLOCK = 64  # query rows and key rows per block (one warpgroup's wgmma M)
_STAGES = 2  # K and V blocks in flight


def kernel(q, k, v):
    b, h, s, d = q.shape
    block = min(_BLOCK, s)
    n_blocks = s // block
    dtype = q.dtype
    item = jnp.dtype(dtype).itemsize
    swizzle = plgpu.find_swizzle(d * item * 8)
    transforms = (plgpu.TilingTransform((8, swizzle // item)), plgpu.SwizzleTransform(swizzle))
    log2_scale = math.log2(math.e) / math.sqrt(d)  # softmax in base 2, 1/sqrt(d) folded in
    row = plgpu.Layout.WGMMA.reduce(1)

    def body(q_gmem, k_gmem, v_gmem, o_gmem, qo_smem, q_barrier):
        qi = n_blocks - 1 - lax.axis_index("q")
        bh = lax.axis_index("bh")
        bi, hi = lax.div(bh, h), lax.rem(bh, h)
        q_rows = pl.ds(qi * block, block)
        plgpu.copy_gmem_to_smem(q_gmem.at[bi, hi, q_rows], qo_smem, q_barrier)
        plgpu.barrier_wait(q_barrier)

        def step(indices, k_smem, v_smem, carry):
            (j,) = indices
            acc, m_i, l_i = carry

            def scores(s_ref):
                plgpu.wgmma(s_ref, qo_smem, k_smem.transpose((1, 0)))
                return s_ref[...]

            sc = pl.run_scoped(scores, plgpu.ACC((block, block), jnp.float32)) * log2_scale
            q_ids = plgpu.broadcasted_iota(jnp.int32, sc.shape, 0, layout=plgpu.Layout.WGMMA)
            k_ids = plgpu.broadcasted_iota(jnp.int32, sc.shape, 1, layout=plgpu.Layout.WGMMA)
            sc = jnp.where(qi * block + q_ids >= j * block + k_ids, sc, -jnp.inf)
            # Key block 0 is visible to every query, so m_new is finite from the first step.
            m_new = jnp.maximum(m_i, sc.max(axis=1))
            alpha = jnp.exp2(m_i - m_new)
            p = jnp.exp2(sc - lax.broadcast_in_dim(m_new, sc.shape, [0]))
            l_new = l_i * alpha + p.sum(axis=1)
            acc = acc * lax.broadcast_in_dim(alpha, acc.shape, [0])

            def pv(acc_ref):
                plgpu.wgmma(acc_ref, p.astype(dtype), v_smem)

            acc = pl.run_state(pv)(plgpu.ACC.init(acc))
            return acc, m_new, l_new

        kv_spec = plgpu.BlockSpec((block, d), lambda j: (j, 0), transforms=transforms)
        init = (
            plgpu.layout_cast(jnp.zeros((block, d), jnp.float32), plgpu.Layout.WGMMA),
            plgpu.layout_cast(jnp.full((block,), -jnp.inf, jnp.float32), row),
            plgpu.layout_cast(jnp.zeros((block,), jnp.float32), row),
        )
        acc, _, l_i = plgpu.emit_pipeline(
            step,
            grid=(qi + 1,),  # key blocks 0 .. qi: the causal prefix
            in_specs=[kv_spec, kv_spec],
            max_concurrent_steps=_STAGES,
            init_carry=init,
        )(k_gmem.at[bi, hi], v_gmem.at[bi, hi])

        out = acc / lax.broadcast_in_dim(l_i, acc.shape, [0])
        qo_smem[...] = out.astype(dtype)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(qo_smem, o_gmem.at[bi, hi, q_rows])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct(q.shape, dtype),
        scratch_types=[plgpu.SMEM((block, d), dtype, transforms=transforms), plgpu.Barrier()],
        grid=(n_blocks, b * h),
        grid_names=("q", "bh"),
        compiler_params=plgpu.CompilerParams(approx_math=True),
    )(q, k, v)
