"""Seed kernel for 48k_matmul_batchnorm_biasadd_divide_swish on TPU: a tiled matmul with a fused epilogue.

Grid (M/bm, N/bn, K/bk); K is the innermost, sequential ("arbitrary") axis and fills a
float32 VMEM accumulator. At the last K step the epilogue (linear bias, eval-mode batch
norm, + bias, / 1.0, swish) runs on the float32 tile and the result is stored once in the
output dtype.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

EPS = 1e-5
DIVIDE_VALUE = 1.0


def _epilogue(y, gamma, beta, mean, var, bias):
    f32 = jnp.float32
    inv = jax.lax.rsqrt(var.astype(f32) + EPS) * gamma.astype(f32)
    z = (y - mean.astype(f32)) * inv + beta.astype(f32)
    z = (z + bias) / DIVIDE_VALUE
    return z * jax.nn.sigmoid(z)


def _kernel(x_ref, w_ref, b_ref, g_ref, be_ref, mu_ref, var_ref, bb_ref, o_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        y = acc_ref[...] + b_ref[...].astype(jnp.float32)
        z = _epilogue(y, g_ref[...], be_ref[...], mu_ref[...], var_ref[...], bb_ref[...])
        o_ref[...] = z.astype(o_ref.dtype)


def kernel(x, weight, linear_bias, bn_scale, bn_bias, bn_mean, bn_var, bias):
    m, kd = x.shape
    n = weight.shape[1]
    bm, bn, bk = min(256, m), min(256, n), min(512, kd)
    vec = pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))
    scalar = pl.BlockSpec((1, 1), lambda i, j, kk: (0, 0))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, kd // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
            vec,
            vec, vec, vec, vec, scalar,
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, weight, linear_bias.reshape(1, n),
      bn_scale.reshape(1, n), bn_bias.reshape(1, n), bn_mean.reshape(1, n), bn_var.reshape(1, n),
      bias.astype(jnp.float32).reshape(1, 1))
