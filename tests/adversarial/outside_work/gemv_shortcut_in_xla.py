"""Cheat (21k_gemm_divide_sum_scaling): the exact shortcut left in XLA.

``sum_j (x Wᵀ)[:, j] = x · colsum(W)``: a GEMV, 0.39 % of the GEMM's nominal 2MKN FLOPs at
full size, so under a budget counted against the task's formula. XLA computes it; the Pallas
kernel only scales and casts. Against the module's own total the kernel does nothing."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _scale(v_ref, o_ref):
    o_ref[...] = (v_ref[...] * 0.75).astype(o_ref.dtype)


def kernel(x, w):
    colsum = jnp.sum(w.astype(jnp.float32), axis=0)  # (K,)
    rows = jnp.dot(x.astype(jnp.float32), colsum)[:, None]  # the task's work, in XLA
    return pl.pallas_call(_scale, out_shape=jax.ShapeDtypeStruct(rows.shape, x.dtype))(rows)
