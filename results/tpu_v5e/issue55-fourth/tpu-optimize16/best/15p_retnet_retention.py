"""Seed kernel for 15p_retnet_retention on TPU: one-pass blocked retention.

Grid (B, H, S/bq, S/bk) with the key axis innermost and sequential. Both the
numerator sum_j A_ij v_j and the normaliser sum_j |A_ij| are linear in the key
blocks, so they accumulate side by side in float32 VMEM scratch and the division
by max(sum|A|, 1) happens once, after the last key block. Key blocks above the
diagonal are skipped (their index map is clamped so no new DMA is issued).
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _retention_kernel(log_gamma_ref, q_ref, k_ref, v_ref, o_ref, acc_ref, den_ref, *, block):
    head, qi, ki = pl.program_id(1), pl.program_id(2), pl.program_id(3)

    @pl.when(ki == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)
        den_ref[...] = jnp.zeros_like(den_ref)

    @pl.when(ki <= qi)
    def _accumulate():
        scores = jax.lax.dot_general(q_ref[...], k_ref[...], (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32)
        rows = qi * block + jax.lax.broadcasted_iota(jnp.int32, (block, block), 0)
        cols = ki * block + jax.lax.broadcasted_iota(jnp.int32, (block, block), 1)
        dist = (rows - cols).astype(jnp.float32)
        causal = dist >= 0.0
        decay = jnp.exp(jnp.where(causal, dist, 0.0) * log_gamma_ref[head])
        a = jnp.where(causal, scores * decay, 0.0)
        den_ref[...] += jnp.broadcast_to(jnp.sum(jnp.abs(a), axis=1, keepdims=True), den_ref.shape)
        acc_ref[...] += jnp.dot(a.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)

    @pl.when(ki == pl.num_programs(3) - 1)
    def _store():
        den = jnp.maximum(den_ref[:, :1], 1.0)
        o_ref[...] = (acc_ref[...] / den).astype(o_ref.dtype)


def kernel(q, k, v):
    b, h, s, d = q.shape
    block = min(256, s)
    log_gamma = jnp.log1p(-jnp.exp2(-5.0 - jnp.arange(h, dtype=jnp.float32)))
    q_spec = pl.BlockSpec((None, None, block, d), lambda bi, hi, qi, ki: (bi, hi, qi, 0))
    kv_spec = pl.BlockSpec((None, None, block, d),
                           lambda bi, hi, qi, ki: (bi, hi, jnp.minimum(ki, qi), 0))
    return pl.pallas_call(
        functools.partial(_retention_kernel, block=block),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(b, h, s // block, s // block),
        in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM), q_spec, kv_spec, kv_spec],
        out_specs=q_spec,
        scratch_shapes=[pltpu.VMEM((block, d), jnp.float32), pltpu.VMEM((block, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
    )(log_gamma, q, k, v)
# copy 10
