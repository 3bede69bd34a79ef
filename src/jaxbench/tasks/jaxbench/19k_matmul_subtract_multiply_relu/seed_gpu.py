"""Seed kernel for 19k_matmul_subtract_multiply_relu on NVIDIA GPUs (Pallas Triton backend).

Each program computes one (bm, bn) tile, looping over K in bk-wide slices with a
float32 register accumulator, then applies ``relu((acc + b - 2) * 1.5)``.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _kernel(x_ref, w_ref, b_ref, o_ref, *, bk, num_k):
    def body(step, acc):
        x = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(x, w, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(o_ref.shape, jnp.float32))
    y = acc + b_ref[...].astype(jnp.float32)[None, :]
    o_ref[...] = jnp.maximum((y - 2.0) * 1.5, 0.0).astype(o_ref.dtype)


def kernel(x, w, b):
    m, k = x.shape
    n = w.shape[1]
    bm, bn, bk = min(128, m), min(128, n), min(64, k)
    return pl.pallas_call(
        functools.partial(_kernel, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, bn), lambda i, j: (0, j)),
            pl.BlockSpec((bn,), lambda i, j: (j,)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, w, b)
