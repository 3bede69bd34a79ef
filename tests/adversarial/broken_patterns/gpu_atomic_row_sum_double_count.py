"""Broken (tests/legit/kernels/gpu_atomic_row_sum.py): each program adds its partial sums twice,
so every row sum is doubled."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BR, BC = 32, 256


def _kernel(x_ref, zero_ref, o_ref):
    del zero_ref  # the output's initial zeros, aliased
    part = jnp.sum(x_ref[...], axis=1)
    rows = pl.ds(pl.program_id(0) * BR, BR)
    plgpu.atomic_add(o_ref, rows, part)
    plgpu.atomic_add(o_ref, rows, part)


def kernel(x):
    m, n = x.shape
    br, bc = min(BR, m), min(BC, n)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m,), jnp.float32),
        grid=(m // br, n // bc),
        in_specs=[pl.BlockSpec((br, bc), lambda i, j: (i, j)),
                  pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        input_output_aliases={1: 0},
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(x, jnp.zeros((m,), jnp.float32))
