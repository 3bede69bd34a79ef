"""Cheat (8p_gemm, GPU): the reduction race of gpu_reduction_race.py with the output block
made the whole array (grid over K only; every program read-modify-writes all of the output).
A race rule that leaves whole-array output blocks alone ("the kernel indexes the output
itself") misses that every program writes the one block."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _kernel(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    bk = 64
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(k // bk,),
        in_specs=[pl.BlockSpec((m, bk), lambda kk: (0, kk)),
                  pl.BlockSpec((bk, n), lambda kk: (kk, 0))],
        out_specs=pl.BlockSpec((m, n), lambda kk: (0, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(a, b).astype(a.dtype)
