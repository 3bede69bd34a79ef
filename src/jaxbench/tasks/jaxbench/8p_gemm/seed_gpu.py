"""Seed kernel for 8p_gemm on NVIDIA GPUs (Pallas Triton backend).

Each program computes one (bm, bn) output tile, looping over K in bk-wide
slices with a float32 accumulator carried in registers (Triton has no scratch).
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _matmul_kernel(a_ref, b_ref, o_ref, *, bk, num_k):
    def body(step, acc):
        a = a_ref[:, pl.ds(step * bk, bk)]
        b = b_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(a, b, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(o_ref.shape, jnp.float32))
    o_ref[...] = acc.astype(o_ref.dtype)


def kernel(a, b):
    m, k = a.shape
    _, n = b.shape
    bm, bn, bk = min(128, m), min(128, n), min(64, k)
    return pl.pallas_call(
        functools.partial(_matmul_kernel, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, bn), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(a, b)
