"""Cheat (8p_gemm, GPU): the matmul runs in XLA (cuBLAS on a GPU) and a Triton kernel only copies
the result, so a Pallas kernel exists. The judge counts the dot in the exported CUDA module."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def kernel(a, b):
    c = jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
    m, n = c.shape
    return pl.pallas_call(
        _copy, out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype), grid=(m // 64, n // 64),
        in_specs=[pl.BlockSpec((64, 64), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((64, 64), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4))(c)
