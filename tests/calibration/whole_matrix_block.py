"""Honest but doomed (8p_gemm): B is one whole block. Correct at the small size (512x512), but
at full size B is 8192x28672 bf16, 448 MiB (one buffer: its index never changes), far beyond
any TPU's VMEM."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _body(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    m, n = a.shape[0], b.shape[1]
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128,),
        in_specs=[pl.BlockSpec((128, a.shape[1]), lambda i: (i, 0)),
                  pl.BlockSpec(b.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, n), lambda i: (i, 0)))(a, b)
