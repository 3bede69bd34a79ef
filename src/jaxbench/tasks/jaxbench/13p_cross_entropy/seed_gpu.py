"""Seed kernel for 13p_cross_entropy on NVIDIA GPUs (Pallas Triton backend).

One program per block of bt tokens. It loops over the vocab in bv-wide tiles;
each tile's logits are accumulated over Hd in bk-wide slices in registers and
folded into a running max, sum of exponentials and picked label logit (online
logsumexp), so the (T, V) logits never reach HBM. Per-token losses are written
out and averaged outside.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NEG = -1e30


def _ce_kernel(h_ref, w_ref, lab_ref, o_ref, *, bv, num_v, bk, num_k):
    bt = h_ref.shape[0]
    labels = lab_ref[...]

    def vocab_step(j, carry):
        m_prev, l_prev, picked = carry

        def k_step(kk, acc):
            h = h_ref[:, pl.ds(kk * bk, bk)]
            w = w_ref[pl.ds(kk * bk, bk), pl.ds(j * bv, bv)]
            return acc + jnp.dot(h, w, preferred_element_type=jnp.float32)

        logits = jax.lax.fori_loop(0, num_k, k_step, jnp.zeros((bt, bv), jnp.float32))
        logits = logits.astype(h_ref.dtype).astype(jnp.float32)
        cols = j * bv + jax.lax.broadcasted_iota(jnp.int32, (bt, bv), 1)
        m_new = jnp.maximum(m_prev, logits.max(axis=1))
        l_new = jnp.exp(m_prev - m_new) * l_prev + jnp.exp(logits - m_new[:, None]).sum(axis=1)
        picked = picked + jnp.where(cols == labels[:, None], logits, 0.0).sum(axis=1)
        return m_new, l_new, picked

    init = (jnp.full((bt,), _NEG, jnp.float32), jnp.zeros((bt,), jnp.float32),
            jnp.zeros((bt,), jnp.float32))
    m, l_sum, picked = jax.lax.fori_loop(0, num_v, vocab_step, init)
    o_ref[...] = m + jnp.log(l_sum) - picked


def kernel(hidden, weight, labels):
    t, hd = hidden.shape
    v = weight.shape[1]
    bt, bv, bk = min(64, t), 128, min(64, hd)
    per_token = pl.pallas_call(
        functools.partial(_ce_kernel, bv=bv, num_v=v // bv, bk=bk, num_k=hd // bk),
        out_shape=jax.ShapeDtypeStruct((t,), jnp.float32),
        grid=(t // bt,),
        in_specs=[
            pl.BlockSpec((bt, hd), lambda i: (i, 0)),
            pl.BlockSpec((hd, v), lambda i: (0, 0)),
            pl.BlockSpec((bt,), lambda i: (i,)),
        ],
        out_specs=pl.BlockSpec((bt,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(hidden, weight, labels)
    return jnp.mean(per_token)
