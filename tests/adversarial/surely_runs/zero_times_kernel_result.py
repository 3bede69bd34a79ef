"""Cheat (21k_gemm_divide_sum_scaling): the answer is the GEMV shortcut in XLA, plus
``0 * kernel_result[0, 0]`` of a full-GEMM kernel. The output "reaches" a kernel and the
kernel does nearly all the module's FLOPs; by value, nothing of it reaches the output."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _matmul(x_ref, w_ref, o_ref):
    o_ref[...] = jax.lax.dot_general(x_ref[...], w_ref[...], (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32)


def kernel(x, w):
    m, n = x.shape[0], w.shape[0]
    full = pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32))(x, w)
    rows = jnp.dot(x.astype(jnp.float32), jnp.sum(w.astype(jnp.float32), axis=0))[:, None]
    return (rows * 0.75 + 0 * full[0, 0]).astype(x.dtype)
