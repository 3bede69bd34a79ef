"""GPU seed for l1_cross_entropy (Pallas Triton backend): 8 rows per program, one pass.

Uses ``-sum_j L_j (z_j - lse) = lse * sum_j L_j - sum_j L_j z_j`` (exact for any L, no
assumption that rows sum to 1), so one pass over (8, 256) column slices of Z and L keeps
four per-row accumulators: the running max and rescaled sum of exponentials (an online
logsumexp), sum L and sum L*z. Every tensor is (8, 256) = 2,048 or (8,) elements, powers
of two far under Triton's 2^20 limit. 8 divides 1024 and 128 (full and small M) and 256
divides 512, so no edge masking is needed; each program writes its own (8,) output block.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _cross_entropy_kernel(z_ref, l_ref, o_ref, *, bn, num_n):
    br = z_ref.shape[0]

    def step(j, carry):
        m, s, sl, slz = carry
        z = z_ref[:, pl.ds(j * bn, bn)]
        lab = l_ref[:, pl.ds(j * bn, bn)]
        m_new = jnp.maximum(m, jnp.max(z, axis=1))
        s = s * jnp.exp(m - m_new) + jnp.sum(jnp.exp(z - m_new[:, None]), axis=1)
        return m_new, s, sl + jnp.sum(lab, axis=1), slz + jnp.sum(lab * z, axis=1)

    zeros = jnp.zeros((br,), jnp.float32)
    init = (jnp.full((br,), -jnp.inf, jnp.float32), zeros, zeros, zeros)
    m, s, sl, slz = jax.lax.fori_loop(0, num_n, step, init)
    o_ref[...] = (m + jnp.log(s)) * sl - slz


def kernel(z, labels):
    m, n = z.shape
    br, bn = min(8, m), min(256, n)
    return pl.pallas_call(
        functools.partial(_cross_entropy_kernel, bn=bn, num_n=n // bn),
        out_shape=jax.ShapeDtypeStruct((m,), z.dtype),
        grid=(m // br,),
        in_specs=[pl.BlockSpec((br, n), lambda i: (i, 0)),
                  pl.BlockSpec((br, n), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((br,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(z, labels)
