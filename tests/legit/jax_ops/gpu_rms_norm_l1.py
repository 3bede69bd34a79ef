"""l1_rmsnorm (no weight): ops.gpu.rms_norm with weight 1 and bias 0."""
import jax.numpy as jnp
from jax.experimental.pallas.ops.gpu import rms_norm

TARGET = "gpu"


def kernel(x):
    n = x.shape[-1]
    # the op maps over two leading axes: (M, N) becomes (1, M, N)
    out = rms_norm.rms_norm(x[None], jnp.ones((n,), x.dtype), jnp.zeros((n,), x.dtype), eps=1e-5)
    return out[0]
