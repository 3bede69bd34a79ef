"""Broken (tests/legit/kernels/gpu_split_k_gemm.py): the partial tiles are added with a plain
read-add-store instead of an atomic, so the K splits of one tile race on a GPU."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BM, BN, BK, SPLITS = 64, 64, 32, 4


def _kernel(a_ref, b_ref, zero_ref, o_ref, *, bm, bn, bk, steps):
    del zero_ref  # the output's initial zeros, aliased
    i, j, s = pl.program_id(0), pl.program_id(1), pl.program_id(2)
    rows = pl.ds(pl.multiple_of(i * bm, bm), bm)
    cols = pl.ds(pl.multiple_of(j * bn, bn), bn)

    def step(t, acc):
        k0 = pl.multiple_of((s * steps + t) * bk, bk)
        a = plgpu.load(a_ref.at[rows, pl.ds(k0, bk)])
        b = plgpu.load(b_ref.at[pl.ds(k0, bk), cols])
        return acc + jnp.dot(a, b, preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, steps, step, jnp.zeros((bm, bn), jnp.float32))
    o_ref[rows, cols] = o_ref[rows, cols] + acc


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = min(BM, m), min(BN, n), min(BK, k)
    splits = max(1, min(SPLITS, k // bk))
    out = pl.pallas_call(
        functools.partial(_kernel, bm=bm, bn=bn, bk=bk, steps=k // (bk * splits)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, splits),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY), pl.BlockSpec(memory_space=pl.ANY),
                  pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        input_output_aliases={2: 0},
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(a, b, jnp.zeros((m, n), jnp.float32))
    return out.astype(a.dtype)
