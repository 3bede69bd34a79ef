"""14p_ragged_dot through Tokamax's public API: ``tokamax.ragged_dot(..., implementation=
"triton")``, its Pallas Triton ragged dot. The rows of every group are one (G*M, K) matrix;
grid (row block, column block, group); every program of a column holds the same (G*M, 128)
output block and stores its group's rows of it, masked (``out_ref.at[rows].store(...,
mask=...)``), guarded by ``pl.when(start < hi)`` with the group offsets read from refs. The
programs of two grid axes share the block and write disjoint elements: no race."""
import jax.numpy as jnp
import tokamax

TARGET = "gpu"


def kernel(x, weights):
    g, m, k = x.shape
    sizes = jnp.full((g,), m, jnp.int32)
    out = tokamax.ragged_dot(x.reshape(g * m, k), weights, sizes,
                             preferred_element_type=jnp.float32, implementation="triton")
    return out.astype(x.dtype).reshape(g, m, weights.shape[2])
