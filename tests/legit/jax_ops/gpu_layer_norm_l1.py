"""l1_layernorm (no affine parameters): ops.gpu.layer_norm with weight 1 and bias 0."""
import jax.numpy as jnp
from jax.experimental.pallas.ops.gpu import layer_norm

TARGET = "gpu"


def kernel(x):
    n = x.shape[-1]
    # the op maps over two leading axes: (M, N) becomes (1, M, N)
    ones, zeros = jnp.ones((n,), x.dtype), jnp.zeros((n,), x.dtype)
    out = layer_norm.layer_norm(x[None], ones, zeros, eps=1e-5)
    return out[0]
