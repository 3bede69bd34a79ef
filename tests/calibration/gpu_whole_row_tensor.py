"""Honest but doomed on a GPU (8p_gemm): each program loads its whole (K, 256) panel of B at
once. At the small size (K = 512: 2^17 elements) the tensor is allowed, but the dot's float32
operands need ~640 KiB of shared memory, over a Hopper block's 227 KiB; at full size the
panel is (8192, 256), 2^21 elements in one tensor, more than Triton allows."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _body(a_ref, b_ref, o_ref):
    b = b_ref[...].astype(jnp.float32)
    o_ref[...] = jnp.dot(a_ref[...].astype(jnp.float32), b).astype(o_ref.dtype)


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 64, n // 256),
        in_specs=[pl.BlockSpec((64, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 256), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((64, 256), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4))(a, b)
