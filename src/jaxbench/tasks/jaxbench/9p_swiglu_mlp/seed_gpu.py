"""Seed kernel for 9p_swiglu_mlp on NVIDIA GPUs (Pallas Triton backend).

Kernel 1: one program per (bm, bf) tile of h; it loops over D in bk-wide slices
with two float32 register accumulators (gate and up) and applies the SwiGLU
epilogue before storing h in bf16. Kernel 2: ``h @ down`` the same way.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _gate_up_kernel(x_ref, g_ref, u_ref, h_ref, *, bk, num_k):
    def body(step, carry):
        gacc, uacc = carry
        x = x_ref[:, pl.ds(step * bk, bk)]
        gacc = gacc + jnp.dot(x, g_ref[pl.ds(step * bk, bk), :], preferred_element_type=jnp.float32)
        uacc = uacc + jnp.dot(x, u_ref[pl.ds(step * bk, bk), :], preferred_element_type=jnp.float32)
        return gacc, uacc

    zeros = jnp.zeros(h_ref.shape, jnp.float32)
    g, u = jax.lax.fori_loop(0, num_k, body, (zeros, zeros))
    h_ref[...] = (g * jax.nn.sigmoid(g) * u).astype(h_ref.dtype)


def _down_kernel(h_ref, w_ref, o_ref, *, bk, num_k):
    def body(step, acc):
        h = h_ref[:, pl.ds(step * bk, bk)]
        return acc + jnp.dot(h, w_ref[pl.ds(step * bk, bk), :], preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(o_ref.shape, jnp.float32))
    o_ref[...] = acc.astype(o_ref.dtype)


def kernel(x, gate, up, down):
    b, s, d = x.shape
    f = gate.shape[1]
    m = b * s
    x2 = x.reshape(m, d)
    bm, bf, bk = min(64, m), min(64, f), min(64, d)
    h = pl.pallas_call(
        functools.partial(_gate_up_kernel, bk=bk, num_k=d // bk),
        out_shape=jax.ShapeDtypeStruct((m, f), x.dtype),
        grid=(m // bm, f // bf),
        in_specs=[
            pl.BlockSpec((bm, d), lambda i, j: (i, 0)),
            pl.BlockSpec((d, bf), lambda i, j: (0, j)),
            pl.BlockSpec((d, bf), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bf), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x2, gate, up)
    bn, bk2 = min(128, d), min(64, f)
    out = pl.pallas_call(
        functools.partial(_down_kernel, bk=bk2, num_k=f // bk2),
        out_shape=jax.ShapeDtypeStruct((m, d), x.dtype),
        grid=(m // bm, d // bn),
        in_specs=[
            pl.BlockSpec((bm, f), lambda i, j: (i, 0)),
            pl.BlockSpec((f, bn), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(h, down)
    return out.reshape(b, s, d)
