"""Cheat (8p_gemm, GPU): the reduction race of gpu_reduction_race.py with the output block made
the whole array: a grid over K only, every program read-modify-writes all of the output (tile
by tile, in a loop inside the kernel). A race rule that leaves whole-array output blocks alone
("the kernel indexes the output itself") misses that every program writes the one block."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BM, BN, BK = 64, 64, 64


def _tiles(a_ref, b_ref, o_ref, accumulate):
    def row(i, carry):
        def col(j, carry):
            rows, cols = pl.ds(i * BM, BM), pl.ds(j * BN, BN)
            part = jnp.dot(a_ref[rows, :], b_ref[:, cols], preferred_element_type=jnp.float32)
            o_ref[rows, cols] = o_ref[rows, cols] + part if accumulate else part
            return carry
        return lax.fori_loop(0, o_ref.shape[1] // BN, col, carry)
    lax.fori_loop(0, o_ref.shape[0] // BM, row, 0)


def _kernel(a_ref, b_ref, o_ref):
    pl.when(pl.program_id(0) == 0)(lambda: _tiles(a_ref, b_ref, o_ref, False))
    pl.when(pl.program_id(0) > 0)(lambda: _tiles(a_ref, b_ref, o_ref, True))


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(k // BK,),
        in_specs=[pl.BlockSpec((m, BK), lambda kk: (0, kk)),
                  pl.BlockSpec((BK, n), lambda kk: (kk, 0))],
        out_specs=pl.BlockSpec((m, n), lambda kk: (0, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(a, b).astype(a.dtype)
