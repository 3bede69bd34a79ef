"""Seed kernel for 16p_mamba2_ssd on TPU: one-pass blocked SSD quadratic form.

cs = cumsum(log sigmoid(A_log)) is computed outside (an O(S) scan per head) and fed
twice: as a column (b, h, S, 1) for the query rows and as a row (b, h, 1, S) for the
key columns, so L = exp(cs_i - cs_j) of a (bq, bk) block is one broadcast subtract.
Grid (b, h, S/bq, S/bk), key axis innermost and sequential: the numerator
sum_j M_ij x_j and the signed row sum sum_j M_ij accumulate side by side in float32
VMEM scratch; the division by max(|row sum|, 1) happens after the last key block.
Key blocks above the diagonal are skipped (index maps clamped: no new DMA).
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _ssd_kernel(cs_q_ref, cs_k_ref, c_ref, b_ref, x_ref, o_ref, acc_ref, den_ref, *, block):
    qi, ki = pl.program_id(2), pl.program_id(3)

    @pl.when(ki == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)
        den_ref[...] = jnp.zeros_like(den_ref)

    @pl.when(ki <= qi)
    def _accumulate():
        scores = jax.lax.dot_general(c_ref[...], b_ref[...], (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32)
        rows = qi * block + jax.lax.broadcasted_iota(jnp.int32, (block, block), 0)
        cols = ki * block + jax.lax.broadcasted_iota(jnp.int32, (block, block), 1)
        causal = rows >= cols
        log_l = cs_q_ref[...] - cs_k_ref[...]
        m = jnp.where(causal, jnp.exp(jnp.where(causal, log_l, 0.0)) * scores, 0.0)
        den_ref[...] += jnp.broadcast_to(jnp.sum(m, axis=1, keepdims=True), den_ref.shape)
        acc_ref[...] += jnp.dot(m.astype(x_ref.dtype), x_ref[...], preferred_element_type=jnp.float32)

    @pl.when(ki == pl.num_programs(3) - 1)
    def _store():
        den = jnp.maximum(jnp.abs(den_ref[:, :1]), 1.0)
        o_ref[...] = (acc_ref[...] / den).astype(o_ref.dtype)


def kernel(c, b, x, a_log):
    nb, nh, s, n = c.shape
    block = min(256, s)
    cs = jnp.cumsum(jax.nn.log_sigmoid(a_log.astype(jnp.float32)), axis=-1)
    q_spec = pl.BlockSpec((None, None, block, n), lambda bi, hi, qi, ki: (bi, hi, qi, 0))
    k_spec = pl.BlockSpec((None, None, block, n),
                          lambda bi, hi, qi, ki: (bi, hi, jnp.minimum(ki, qi), 0))
    return pl.pallas_call(
        functools.partial(_ssd_kernel, block=block),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(nb, nh, s // block, s // block),
        in_specs=[
            pl.BlockSpec((None, None, block, 1), lambda bi, hi, qi, ki: (bi, hi, qi, 0)),
            pl.BlockSpec((None, None, 1, block),
                         lambda bi, hi, qi, ki: (bi, hi, 0, jnp.minimum(ki, qi))),
            q_spec, k_spec, k_spec,
        ],
        out_specs=q_spec,
        scratch_shapes=[pltpu.VMEM((block, n), jnp.float32), pltpu.VMEM((block, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
    )(cs[..., :, None], cs[..., None, :], c, b, x)
