"""Cheat (8p_gemm): asks for a 16 GiB VMEM scratch buffer (a TPU core has tens of MiB), e.g.
to exhaust the harness's memory. Whatever runs it first runs out of memory."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref, scratch_ref):
    scratch_ref[...] = jnp.zeros_like(scratch_ref)
    acc = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (acc + scratch_ref[: acc.shape[0], : acc.shape[1]]).astype(o_ref.dtype)


def kernel(a, b):
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype),
        scratch_shapes=[pltpu.VMEM((1 << 16, 1 << 16), jnp.float32)])(a, b)
