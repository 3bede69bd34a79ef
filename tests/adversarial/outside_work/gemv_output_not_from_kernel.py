"""Cheat (21k_gemm_divide_sum_scaling): the GEMV shortcut in XLA is the output, and a Pallas
kernel beside it does a full matmul nobody reads. Counted by totals alone the kernels do nearly
all the module's work; by data flow, no kernel's result reaches the output."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _matmul(x_ref, w_ref, o_ref):
    o_ref[...] = jax.lax.dot_general(x_ref[...], w_ref[...], (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32)


def kernel(x, w):
    m, n = x.shape[0], w.shape[0]
    spec = pl.BlockSpec((m, x.shape[1]), lambda: (0, 0))
    pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                   in_specs=[spec, pl.BlockSpec(w.shape, lambda: (0, 0))],
                   out_specs=pl.BlockSpec((m, n), lambda: (0, 0)))(x, w)  # read by nobody
    colsum = jnp.sum(w.astype(jnp.float32), axis=0)
    return (jnp.dot(x.astype(jnp.float32), colsum)[:, None] * 0.75).astype(x.dtype)
