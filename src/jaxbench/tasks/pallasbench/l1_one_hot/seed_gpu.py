"""GPU seed for l1_one_hot (Pallas Triton backend): (32, 256) output tiles, 2-D grid.

Program (i, j) loads its 32 indices (a (32,) block) and compares them with the 256 class
ids ``j * 256 + iota`` of its column tile. Tensors: (32,) indices, (32, 256) = 8,192
compare/output elements: powers of two under 2^20. 32 divides 512 and 128 (full and small
N) and 256 divides the 1024 classes, so no edge masking is needed.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

NUM_CLASSES = 1024


def _one_hot_kernel(idx_ref, o_ref):
    bc = o_ref.shape[1]
    classes = pl.program_id(1) * bc + jax.lax.broadcasted_iota(jnp.int32, o_ref.shape, 1)
    o_ref[...] = (idx_ref[...][:, None] == classes).astype(o_ref.dtype)


def kernel(idx):
    (n,) = idx.shape
    br, bc = min(32, n), 256
    return pl.pallas_call(
        _one_hot_kernel,
        out_shape=jax.ShapeDtypeStruct((n, NUM_CLASSES), jnp.float32),
        grid=(n // br, NUM_CLASSES // bc),
        in_specs=[pl.BlockSpec((br,), lambda i, j: (i,))],
        out_specs=pl.BlockSpec((br, bc), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(idx)
