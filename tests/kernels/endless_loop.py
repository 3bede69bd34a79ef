"""Bad kernel for 8p_gemm: a Pallas kernel whose loop never ends."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    acc = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    # The counter never moves, so the condition stays true; sin() keeps the loop alive in XLA.
    acc = jax.lax.while_loop(lambda c: c[1] >= 0, lambda c: (jnp.sin(c[0]), c[1]),
                             (acc, jnp.int32(0)))[0]
    o_ref[...] = acc.astype(o_ref.dtype)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(a, b)
