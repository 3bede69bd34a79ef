"""41k_gemm_add_relu as a model writes it: a `Model` class whose constructor draws default
weights with `jax.random.PRNGKey(0)`, replaced by the task's weights when they are given;
`kernel` builds the model from the task's tensors and calls it."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _gemm_bias_relu(x_ref, w_ref, b_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        y = acc_ref[...].astype(o_ref.dtype).astype(jnp.float32) + b_ref[...].astype(jnp.float32)
        o_ref[...] = jnp.maximum(y, 0.0).astype(o_ref.dtype)


class Model:
    def __init__(self, in_features, out_features, weight=None, bias=None):
        key = jax.random.PRNGKey(0)
        w_key, b_key = jax.random.split(key)
        self.weight = jax.random.normal(w_key, (in_features, out_features), jnp.bfloat16)
        self.bias = jax.random.normal(b_key, (out_features,), jnp.bfloat16) * 0.1
        if weight is not None:
            self.weight = weight
        if bias is not None:
            self.bias = bias

    def __call__(self, x):
        m, k = x.shape
        n = self.weight.shape[1]
        bm, bn, bk = min(256, m), min(256, n), min(512, k)
        return pl.pallas_call(
            _gemm_bias_relu,
            out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
            grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                      pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel", "arbitrary")),
        )(x, self.weight, self.bias.reshape(1, n))


def kernel(x, weight, bias):
    return Model(x.shape[1], weight.shape[1], weight, bias)(x)
