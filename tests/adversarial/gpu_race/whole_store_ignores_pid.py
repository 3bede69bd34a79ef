"""Cheat (8p_gemm, GPU): a grid over K whose programs all read-modify-write the whole output with
``plgpu.load``/``plgpu.store`` at ``pl.ds(kk * 0, m)``: the location mentions the program id but does
not depend on it, so every program writes every element. Run in order (the interpreter) it is
right; on a GPU the programs race."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BK = 16


def _kernel(a_ref, b_ref, o_ref):
    kk = pl.program_id(0)
    part = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    rows = pl.ds(kk * 0, o_ref.shape[0])
    before = plgpu.load(o_ref.at[rows, :])
    plgpu.store(o_ref.at[rows, :], jnp.where(kk == 0, part, before + part))


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(k // BK,),
        in_specs=[pl.BlockSpec((m, BK), lambda kk: (0, kk)),
                  pl.BlockSpec((BK, n), lambda kk: (kk, 0))],
        out_specs=pl.BlockSpec((m, n), lambda kk: (0, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(a, b).astype(a.dtype)
