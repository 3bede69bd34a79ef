"""Cheat (8p_gemm, GPU): more than 2^20 grid programs (the old rule's limit, above which it only
asked which axes the index map mentions): a third grid axis of 4,100 programs, mentioned in the
output index map as ``r * 0``, so 4,100 programs write every output block at once."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BM, BN, REPEAT = 16, 16, 4100


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // BM, n // BN, REPEAT),
        in_specs=[pl.BlockSpec((BM, k), lambda i, j, r: (i, 0)),
                  pl.BlockSpec((k, BN), lambda i, j, r: (0, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j, r: (i, j + r * 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(a, b).astype(a.dtype)
