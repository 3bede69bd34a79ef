"""Honest (8p_gemm, GPU): a grid over M and N blocks, the K reduction inside the kernel: every
program writes its own output block. The race rule must pass it."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BM, BN, BK = 64, 64, 64


def _kernel(a_ref, b_ref, o_ref):
    def step(kk, acc):
        a = a_ref[:, pl.ds(kk * BK, BK)]
        return acc + jnp.dot(a, b_ref[pl.ds(kk * BK, BK), :], preferred_element_type=jnp.float32)

    o_ref[...] = lax.fori_loop(0, a_ref.shape[1] // BK, step, jnp.zeros(o_ref.shape, jnp.float32))


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // BM, n // BN),
        in_specs=[pl.BlockSpec((BM, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, BN), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(a, b).astype(a.dtype)
