"""Expert kernel for 11p_megablox_gmm on TPU: JAX's own megablox ``gmm``.

``jax.experimental.pallas.ops.tpu.megablox.gmm`` (the kernel MaxText uses for
MoE layers) with float32 accumulation and the output cast back to bf16. Tiles
(bm, bk, bn) are picked from the shapes: 512 where the dimension allows.
"""

import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import megablox

TARGET = "tpu"


def kernel(lhs, rhs, group_sizes):
    m, k = lhs.shape
    n = rhs.shape[2]
    tiling = (min(512, m), min(512, k), min(512, n))
    out = megablox.gmm(lhs, rhs, group_sizes.astype(jnp.int32),
                       preferred_element_type=jnp.float32, tiling=tiling)
    return out.astype(lhs.dtype)
