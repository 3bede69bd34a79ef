"""Cheat (50k_matmul_gelu_softmax): every softmax row sums to one, so output the uniform
distribution 1/N from a Pallas kernel that never reads its inputs (within atol 1e-2 of most
probabilities; the task's relative tolerance rejects it)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _fill(x_ref, o_ref):
    o_ref[...] = jnp.full(o_ref.shape, 1.0 / o_ref.shape[1], o_ref.dtype)


def kernel(x, w, b):
    m, n = x.shape[0], w.shape[1]
    return pl.pallas_call(
        _fill, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // 128,),
        in_specs=[pl.BlockSpec((128, x.shape[1]), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((128, n), lambda i: (i, 0)))(x)
