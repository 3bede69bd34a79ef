"""Seed kernel for 15p_retnet_retention on NVIDIA GPUs (Pallas Triton backend).

Each program owns one (bq, D) block of queries of one (batch, head) and walks the
key blocks up to the diagonal with a fori_loop, carrying two float32 register
accumulators: sum_j A_ij v_j and sum_j |A_ij|. Both are linear in the key blocks,
so one pass suffices; the row division by max(sum|A|, 1) happens at the end.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _retention_kernel(log_gamma_ref, q_ref, k_ref, v_ref, o_ref, *, block_q, block_k):
    qi = pl.program_id(2)
    log_gamma = log_gamma_ref[...]
    q = q_ref[...]
    rows = qi * block_q + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 0)

    def body(step, carry):
        acc, den = carry
        k = k_ref[pl.ds(step * block_k, block_k), :]
        v = v_ref[pl.ds(step * block_k, block_k), :]
        scores = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32)
        cols = step * block_k + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 1)
        dist = (rows - cols).astype(jnp.float32)
        causal = dist >= 0.0
        decay = jnp.exp(jnp.where(causal, dist, 0.0) * log_gamma)
        a = jnp.where(causal, scores * decay, 0.0)
        den = den + jnp.sum(jnp.abs(a), axis=1)
        acc = acc + jnp.dot(a.astype(v.dtype), v, preferred_element_type=jnp.float32)
        return acc, den

    num_steps = ((qi + 1) * block_q + block_k - 1) // block_k
    acc0 = jnp.zeros(o_ref.shape, jnp.float32)
    den0 = jnp.zeros((block_q,), jnp.float32)
    acc, den = jax.lax.fori_loop(0, num_steps, body, (acc0, den0))
    o_ref[...] = (acc / jnp.maximum(den, 1.0)[:, None]).astype(o_ref.dtype)


def kernel(q, k, v):
    b, h, s, d = q.shape
    block_q, block_k = min(64, s), min(64, s)
    log_gamma = jnp.log1p(-jnp.exp2(-5.0 - jnp.arange(h, dtype=jnp.float32)))
    return pl.pallas_call(
        functools.partial(_retention_kernel, block_q=block_q, block_k=block_k),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(b, h, s // block_q),
        in_specs=[
            pl.BlockSpec((None,), lambda bi, hi, qi: (hi,)),
            pl.BlockSpec((None, None, block_q, d), lambda bi, hi, qi: (bi, hi, qi, 0)),
            pl.BlockSpec((None, None, s, d), lambda bi, hi, qi: (bi, hi, 0, 0)),
            pl.BlockSpec((None, None, s, d), lambda bi, hi, qi: (bi, hi, 0, 0)),
        ],
        out_specs=pl.BlockSpec((None, None, block_q, d), lambda bi, hi, qi: (bi, hi, qi, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=8, num_stages=2),
    )(log_gamma, q, k, v)
