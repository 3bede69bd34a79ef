"""14p_ragged_dot (a batched matmul): ops.tpu.megablox gmm with G equal groups of M rows."""
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu.megablox import gmm

TARGET = "tpu"


def kernel(x, weights):
    g, m, k = x.shape
    sizes = jnp.full((g,), m, jnp.int32)
    out = gmm(x.reshape(g * m, k), weights, sizes, preferred_element_type=jnp.float32,
              tiling=(128, 128, 128))
    return out.astype(x.dtype).reshape(g, m, weights.shape[-1])
