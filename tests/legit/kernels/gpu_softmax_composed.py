"""Legit (50k_matmul_gelu_softmax): a Triton Pallas matmul + bias + exact GELU, then JAX's
Pallas GPU softmax (jax.experimental.pallas.ops.gpu.softmax) over each row. Shows that library
kernels with no task of their own are judged fairly inside a composed candidate."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu
from jax.experimental.pallas.ops.gpu import softmax as pallas_softmax

TARGET = "gpu"


def _erf(x):
    # Triton lowers no erf: the Abramowitz-Stegun 7.1.26 rational approximation (|err| < 2e-7).
    t = 1.0 / (1.0 + 0.3275911 * jnp.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
        -1.453152027 + t * 1.061405429))))
    return jnp.sign(x) * (1.0 - poly * jnp.exp(-x * x))


def _matmul_gelu(x_ref, w_ref, b_ref, o_ref, *, bk, num_k):
    def body(step, acc):
        x = x_ref[:, pl.ds(step * bk, bk)]
        w = w_ref[pl.ds(step * bk, bk), :]
        return acc + jnp.dot(x, w, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_k, body, jnp.zeros(o_ref.shape, jnp.float32))
    y = (acc.astype(o_ref.dtype) + b_ref[...][None, :]).astype(jnp.float32)
    o_ref[...] = (0.5 * y * (1.0 + _erf(y * 0.7071067811865476))).astype(
        o_ref.dtype)


def kernel(x, w, b):
    m, k = x.shape
    n = w.shape[1]
    bm, bn, bk = 64, 128, 64
    h = pl.pallas_call(
        functools.partial(_matmul_gelu, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, bn), lambda i, j: (0, j)),
                  pl.BlockSpec((bn,), lambda i, j: (j,))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(x, w, b)
    return pallas_softmax.softmax(h, axis=-1)
