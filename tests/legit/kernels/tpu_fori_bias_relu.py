"""Legit (19k_matmul_subtract_multiply_relu): own TPU kernel, grid over row and column tiles,
a fori_loop over K slices accumulating in float32, then bias, -2, x1.5 and ReLU in bf16."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _kernel(x_ref, w_ref, b_ref, o_ref, *, bk):
    def body(step, acc):
        x = x_ref[:, pl.ds(pl.multiple_of(step * bk, bk), bk)]
        w = w_ref[pl.ds(pl.multiple_of(step * bk, bk), bk), :]
        return acc + jnp.dot(x, w, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, x_ref.shape[1] // bk, body,
                            jnp.zeros(o_ref.shape, jnp.float32))
    y = acc.astype(o_ref.dtype) + b_ref[...]
    o_ref[...] = jnp.maximum((y - 2.0) * 1.5, 0).astype(o_ref.dtype)


def kernel(x, w, b):
    m, k = x.shape
    n = w.shape[1]
    bm, bn = 128, 256
    return pl.pallas_call(
        functools.partial(_kernel, bk=256),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, bn), lambda i, j: (0, j)),
                  pl.BlockSpec((1, bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(x, w, b.reshape(1, n))
