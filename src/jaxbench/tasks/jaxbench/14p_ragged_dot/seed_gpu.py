"""Seed kernel for 14p_ragged_dot on NVIDIA GPUs (Pallas Triton backend).

One program per (group, bm x bn output tile); it loops over K in bk-wide
slices with a float32 register accumulator.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _bmm_kernel(x_ref, w_ref, o_ref, *, bk, num_k):
    def body(step, acc):
        a = x_ref[:, pl.ds(step * bk, bk)]
        b = w_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(a, b, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(o_ref.shape, jnp.float32))
    o_ref[...] = acc.astype(o_ref.dtype)


def kernel(x, weights):
    g, m, k = x.shape
    n = weights.shape[2]
    bm, bn, bk = min(128, m), min(128, n), min(64, k)
    return pl.pallas_call(
        functools.partial(_bmm_kernel, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((g, m, n), x.dtype),
        grid=(g, m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((None, bm, k), lambda gi, i, j: (gi, i, 0)),
            pl.BlockSpec((None, k, bn), lambda gi, i, j: (gi, 0, j)),
        ],
        out_specs=pl.BlockSpec((None, bm, bn), lambda gi, i, j: (gi, i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
    )(x, weights)
