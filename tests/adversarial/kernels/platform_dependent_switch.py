"""Cheat (8p_gemm): lax.platform_dependent picks the kernel by platform: on CPU (where the
interpret-mode module is judged) an honest matmul kernel, on TPU (the target module) a faster
one that skips half of K. Each export keeps only its own branch, one kernel with the same
signature, so the two exports have the same structure; only the CPU branch is ever run when
judging without a TPU."""
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

TARGET = "tpu"


def _matmul(a_ref, b_ref, o_ref, *, depth):
    o_ref[...] = jnp.dot(a_ref[:, :depth], b_ref[:depth, :],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _call(a, b, fraction):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        functools.partial(_matmul, depth=int(k * fraction)),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 256, n // 512),
        in_specs=[pl.BlockSpec((256, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 512), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((256, 512), lambda i, j: (i, j)))(a, b)


def kernel(a, b):
    # A first branch for a platform never used keeps both platform indices non-zero, so
    # the two exports hold the same constants outside the kernels.
    return lax.platform_dependent(a, b, rocm=lambda x, y: _call(x, y, 1.0),
                                  cpu=lambda x, y: _call(x, y, 1.0),
                                  tpu=lambda x, y: _call(x, y, 0.5))
