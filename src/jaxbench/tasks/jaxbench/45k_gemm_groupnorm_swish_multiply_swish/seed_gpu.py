"""Seed kernel for 45k_gemm_groupnorm_swish_multiply_swish on NVIDIA GPUs (Pallas Triton backend).

Each program computes one (bm, bn) output tile, looping over K in bk-wide slices with a
float32 register accumulator; the weight is in PyTorch (N, K) layout, so each step
contracts the K axes of an x slice and a weight slice (x @ W^T). bn is a multiple of the
32-feature group, so the tile holds whole groups: the epilogue reshapes it to
(bm, bn/32, 32) for the group statistics, then applies the affine, swish,
x multiply_weight and swish in float32 before the store.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

GROUP_SIZE = 32
EPS = 1e-5
_NT = (((1,), (1,)), ((), ()))  # contract the last axis of both operands: a @ b^T


def _swish(v):
    return v * jax.nn.sigmoid(v)


def _kernel(x_ref, w_ref, b_ref, gw_ref, gb_ref, mw_ref, o_ref, *, bk, nk):
    bm, bn = o_ref.shape
    f32 = jnp.float32

    def body(step, acc):
        a = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[:, pl.ds(step * bk, bk)]
        return acc + jax.lax.dot_general(a, w, _NT, preferred_element_type=f32)

    acc = jax.lax.fori_loop(0, nk, body, jnp.zeros((bm, bn), f32))
    y = (acc + b_ref[...].astype(f32)[None, :]).reshape(bm, bn // GROUP_SIZE, GROUP_SIZE)
    d = y - jnp.mean(y, axis=2, keepdims=True)
    var = jnp.mean(d * d, axis=2, keepdims=True)
    z = (d * jax.lax.rsqrt(var + EPS)).reshape(bm, bn)
    z = z * gw_ref[...].astype(f32)[None, :] + gb_ref[...].astype(f32)[None, :]
    o_ref[...] = _swish(_swish(z) * mw_ref[...].astype(f32)[None, :]).astype(o_ref.dtype)


def kernel(x, weight, bias, gn_weight, gn_bias, multiply_weight):
    m, kd = x.shape
    n = weight.shape[0]
    bm, bn, bk = min(64, m), min(128, n), min(64, kd)
    vec = pl.BlockSpec((bn,), lambda i, j: (j,))
    return pl.pallas_call(
        functools.partial(_kernel, bk=bk, nk=kd // bk),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, kd), lambda i, j: (i, 0)),
            pl.BlockSpec((bn, kd), lambda i, j: (j, 0)),
            vec, vec, vec, vec,
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, weight, bias, gn_weight, gn_bias, multiply_weight)
