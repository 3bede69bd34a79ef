"""14p_ragged_dot with Tokamax's Pallas Triton ragged dot op (the kernel behind
``tokamax.ragged_dot(..., implementation="triton")``), uneven group sizes so that the row
masks cut blocks. Tokamax refuses CPU devices, where the harness traces and interprets every
Pallas kernel, so the op is subclassed to accept them (as the TPU experts do); the kernel is
unchanged: programs along the group axis share one output block and store disjoint masked
rows of it."""
import jax.numpy as jnp
import numpy as np
from tokamax._src.ops.ragged_dot import pallas_triton as tk

TARGET = "gpu"


class _RaggedDot(tk.PallasTritonRaggedDot):
    def supported_on(self, device):
        return device.platform == "cpu" or super().supported_on(device)


def kernel(x, weights):
    g, m, k = x.shape
    # each group's rows as two sub-groups of uneven size (m // 3 and the rest), same weights
    sizes = np.array([m // 3, m - m // 3] * g, np.int32)
    config = tk.Config(block_m=64, block_n=128, block_k=64, num_warps=4, num_stages=2)
    rhs = jnp.repeat(weights, 2, axis=0)
    out = _RaggedDot(config=config)(x.reshape(g * m, k), rhs, group_sizes=jnp.asarray(sizes),
                                    preferred_element_type=jnp.float32)
    return out.astype(x.dtype).reshape(g, m, weights.shape[2])
