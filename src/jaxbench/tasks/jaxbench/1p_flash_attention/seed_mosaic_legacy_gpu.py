"""Seed kernel for 1p_flash_attention on NVIDIA Hopper GPUs (Pallas Mosaic GPU backend).

One thread block per (query block, batch x head); the KV blocks are a "sequential" grid
axis, which Mosaic GPU runs in order inside the block as a software pipeline (TMA copies
of the next K and V tiles overlap the current step). Each step computes the score tile
q kᵀ with a warpgroup MMA (wgmma) into float32 registers, applies the causal mask, and
updates the online softmax: the running row max and denominator and the float32 output
accumulator live in shared memory between steps, and p v is a second wgmma with p taken
from registers. KV blocks entirely above the diagonal are loaded but not computed. The
last step divides by the denominator and writes the output tile.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

TARGET = "gpu"


def _attention_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, scale, bq, bk):
    qi, ki = pl.program_id(0), pl.program_id(2)
    row = plgpu.Layout.WGMMA.reduce(1)
    d = acc_ref.shape[-1]

    @pl.when(ki == 0)
    def _():
        m_ref[...] = plgpu.layout_cast(jnp.full((bq,), -jnp.inf, jnp.float32), row)
        l_ref[...] = plgpu.layout_cast(jnp.zeros((bq,), jnp.float32), row)
        acc_ref[...] = plgpu.layout_cast(jnp.zeros((bq, d), jnp.float32), plgpu.Layout.WGMMA)

    @pl.when(ki * bk < (qi + 1) * bq)  # some key of this block is at or before some query
    def _():
        def scores(s_ref):
            plgpu.wgmma(s_ref, q_ref, plgpu.transpose_ref(k_ref, (1, 0)))
            return s_ref[...]

        s = pl.run_scoped(scores, plgpu.ACC((bq, bk), jnp.float32)) * scale
        q_ids = plgpu.broadcasted_iota(jnp.int32, (bq, bk), 0, layout=plgpu.Layout.WGMMA)
        k_ids = plgpu.broadcasted_iota(jnp.int32, (bq, bk), 1, layout=plgpu.Layout.WGMMA)
        s = jnp.where(qi * bq + q_ids >= ki * bk + k_ids, s, -jnp.inf)
        m_prev = plgpu.load(m_ref, (), layout=row)
        m_new = jnp.maximum(m_prev, s.max(axis=1))
        alpha = jnp.exp(m_prev - m_new)
        p = jnp.exp(s - lax.broadcast_in_dim(m_new, s.shape, [0]))
        l_ref[...] = plgpu.load(l_ref, (), layout=row) * alpha + p.sum(axis=1)
        m_ref[...] = m_new
        acc = plgpu.load(acc_ref, (), layout=plgpu.Layout.WGMMA)
        acc = acc * lax.broadcast_in_dim(alpha, acc.shape, [0])

        def update(acc_scope):
            plgpu.wgmma(acc_scope, p.astype(v_ref.dtype), v_ref)

        acc_ref[...] = pl.run_state(update)(plgpu.ACC.init(acc))

    @pl.when(ki == pl.num_programs(2) - 1)
    def _():
        acc = plgpu.load(acc_ref, (), layout=plgpu.Layout.WGMMA)
        l = plgpu.load(l_ref, (), layout=row)
        o_ref[...] = (acc / lax.broadcast_in_dim(l, acc.shape, [0])).astype(o_ref.dtype)


def kernel(q, k, v):
    b, h, s, d = q.shape
    bq, bk = min(64, s), min(64, s)
    item = jnp.dtype(q.dtype).itemsize
    swizzle = plgpu.find_swizzle(d * item * 8)
    transforms = (plgpu.TilingTransform((8, swizzle // item)), plgpu.SwizzleTransform(swizzle))

    def tile(rows, index_map):
        return plgpu.BlockSpec((None, None, rows, d), index_map, transforms=transforms)

    return pl.pallas_call(
        functools.partial(_attention_kernel, scale=1.0 / math.sqrt(d), bq=bq, bk=bk),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(s // bq, b * h, s // bk),
        in_specs=[tile(bq, lambda qi, bh, ki: (bh // h, bh % h, qi, 0)),
                  tile(bk, lambda qi, bh, ki: (bh // h, bh % h, ki, 0)),
                  tile(bk, lambda qi, bh, ki: (bh // h, bh % h, ki, 0))],
        out_specs=plgpu.BlockSpec((None, None, bq, d), lambda qi, bh, ki: (bh // h, bh % h, qi, 0)),
        scratch_shapes=[plgpu.SMEM((bq,), jnp.float32), plgpu.SMEM((bq,), jnp.float32),
                        plgpu.SMEM((bq, d), jnp.float32, transforms=(
                            plgpu.TilingTransform((8, 32)), plgpu.SwizzleTransform(128)))],
        compiler_params=plgpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "sequential"),
            max_concurrent_steps=2),
    )(q, k, v)
