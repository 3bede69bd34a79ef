"""Broken (tests/legit/kernels/gpu_model_prng_weights.py): the model keeps the weights it drew
from its typed key and ignores the task's."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _gemm_bias_relu(x_ref, w_ref, b_ref, o_ref, *, bk, steps):
    def step(t, acc):
        a = x_ref[:, pl.ds(t * bk, bk)]
        w = w_ref[pl.ds(t * bk, bk), :]
        return acc + jnp.dot(a, w, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, steps, step, jnp.zeros(o_ref.shape, jnp.float32))
    y = acc.astype(o_ref.dtype).astype(jnp.float32) + b_ref[...].astype(jnp.float32)[None, :]
    o_ref[...] = jnp.maximum(y, 0.0).astype(o_ref.dtype)


class Model:
    def __init__(self, in_features, out_features, weight=None, bias=None):
        key = jax.random.key(0)
        w_key, b_key = jax.random.split(jax.random.fold_in(key, 41))
        scale = 1.0 / in_features ** 0.5
        self.weight = jax.random.uniform(w_key, (in_features, out_features), jnp.bfloat16,
                                         -scale, scale)
        self.bias = jax.random.uniform(b_key, (out_features,), jnp.bfloat16, -scale, scale)
        if bias is not None:
            self.bias = bias

    def __call__(self, x):
        m, k = x.shape
        n = self.weight.shape[1]
        bm, bn, bk = min(128, m), min(128, n), min(64, k)
        return pl.pallas_call(
            functools.partial(_gemm_bias_relu, bk=bk, steps=k // bk),
            out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
            grid=(m // bm, n // bn),
            in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                      pl.BlockSpec((k, bn), lambda i, j: (0, j)),
                      pl.BlockSpec((bn,), lambda i, j: (j,))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
            compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=3),
        )(x, self.weight, self.bias)


def kernel(x, weight, bias):
    return Model(x.shape[1], weight.shape[1], weight, bias)(x)
