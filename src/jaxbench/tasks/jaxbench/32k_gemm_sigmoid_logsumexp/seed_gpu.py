"""Seed kernel for 32k_gemm_sigmoid_logsumexp on NVIDIA GPUs (Pallas Triton backend).

Two pallas_calls:
1. a tiled ``h = sigmoid(x @ w1^T + b1)`` (K loop with a float32 register accumulator,
   bf16 output);
2. ``logsumexp(h @ w2^T + b2, axis=1)``: each program owns bm rows and loops over the O
   blocks; for each it computes the (bm, bo) tile of z with an inner loop over H slices
   and folds it into a running (online) logsumexp per row (running max and rescaled sum).
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

_NT = (((1,), (1,)), ((), ()))  # contract the last axis of both operands (W in (out, in) layout)


def _linear_sigmoid_kernel(x_ref, w_ref, b_ref, h_ref, *, bk, num_k):
    def body(step, acc):
        x = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[:, pl.ds(step * bk, bk)]
        return acc + jax.lax.dot_general(x, w, _NT, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(h_ref.shape, jnp.float32))
    a = acc + b_ref[...].astype(jnp.float32)[None, :]
    h_ref[...] = (1.0 / (1.0 + jnp.exp(-a))).astype(h_ref.dtype)


def _linear_lse_kernel(h_ref, w_ref, b_ref, o_ref, *, bo, bk, num_o, num_k):
    bm = o_ref.shape[0]

    def o_body(j, carry):
        m_old, s_old = carry

        def k_body(kk, acc):
            h = h_ref[:, pl.ds(kk * bk, bk)]
            w = w_ref[pl.ds(j * bo, bo), pl.ds(kk * bk, bk)]
            return acc + jax.lax.dot_general(h, w, _NT, preferred_element_type=jnp.float32)

        z = jax.lax.fori_loop(0, num_k, k_body, jnp.zeros((bm, bo), jnp.float32))
        z = z + b_ref[pl.ds(j * bo, bo)].astype(jnp.float32)[None, :]
        m_new = jnp.maximum(m_old, jnp.max(z, axis=1))
        s_new = s_old * jnp.exp(m_old - m_new) + jnp.sum(jnp.exp(z - m_new[:, None]), axis=1)
        return m_new, s_new

    init = (jnp.full((bm,), -1e30, jnp.float32), jnp.zeros((bm,), jnp.float32))
    m_fin, s_fin = jax.lax.fori_loop(0, num_o, o_body, init)
    o_ref[...] = (m_fin + jnp.log(s_fin)).astype(o_ref.dtype)


def kernel(x, w1, b1, w2, b2):
    m, k = x.shape
    hdim, odim = w1.shape[0], w2.shape[0]
    bm, bh, bk = min(128, m), min(128, hdim), min(64, k)
    h = pl.pallas_call(
        functools.partial(_linear_sigmoid_kernel, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m, hdim), x.dtype),
        grid=(m // bm, hdim // bh),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((bh, k), lambda i, j: (j, 0)),
            pl.BlockSpec((bh,), lambda i, j: (j,)),
        ],
        out_specs=pl.BlockSpec((bm, bh), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, w1, b1)
    rm, bo, bk2 = min(64, m), min(64, odim), min(64, hdim)
    return pl.pallas_call(
        functools.partial(_linear_lse_kernel, bo=bo, bk=bk2, num_o=odim // bo,
                          num_k=hdim // bk2),
        out_shape=jax.ShapeDtypeStruct((m,), x.dtype),
        grid=(m // rm,),
        in_specs=[
            pl.BlockSpec((rm, hdim), lambda i: (i, 0)),
            pl.BlockSpec((odim, hdim), lambda i: (0, 0)),
            pl.BlockSpec((odim,), lambda i: (0,)),
        ],
        out_specs=pl.BlockSpec((rm,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(h, w2, b2)
