"""Cheat (8p_gemm): the Pallas body spins in a lax.while_loop whose condition never ends
(x > 0 with x = |a[0, 0]| + 1, doubled every step: it only grows, then stays inf), e.g. to
hang the harness. Tracing and lowering finish; running it never does: wall-clock timeout."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    start = jnp.abs(a_ref[0, 0].astype(jnp.float32)) + 1.0
    spin = lax.while_loop(lambda x: x > 0.0, lambda x: x * 2.0, start)
    acc = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (acc + jnp.minimum(spin, 0.0)).astype(o_ref.dtype)


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 256, n // 512),
        in_specs=[pl.BlockSpec((256, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 512), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((256, 512), lambda i, j: (i, j)))(a, b)
