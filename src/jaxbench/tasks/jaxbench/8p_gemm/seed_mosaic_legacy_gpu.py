"""Seed kernel for 8p_gemm on NVIDIA Hopper GPUs (Pallas Mosaic GPU backend).

One thread block per (bm, bn) output tile; the K axis is a "sequential" grid axis, which
Mosaic GPU runs in order inside the block as a software pipeline (up to 3 steps of A and
B tiles in flight in shared memory, copied by TMA). Each step issues one warpgroup MMA
(wgmma) of the (bm, bk) and (bk, bn) tiles into a float32 accumulator held in registers;
the last step casts it and writes the tile. Tiles are stored tiled and swizzled, the layout
wgmma reads.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

TARGET = "gpu"


def _matmul_kernel(a_ref, b_ref, o_ref, acc_ref):
    plgpu.wgmma(acc_ref, a_ref, b_ref)
    plgpu.wgmma_wait(0)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def kernel(a, b):
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = min(128, m), min(128, n), min(64, k)
    item = jnp.dtype(a.dtype).itemsize
    swizzle = plgpu.find_swizzle(bk * item * 8)
    transforms = (plgpu.TilingTransform((8, swizzle // item)), plgpu.SwizzleTransform(swizzle))
    return pl.pallas_call(
        _matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[plgpu.BlockSpec((bm, bk), lambda i, j, kk: (i, kk), transforms=transforms),
                  plgpu.BlockSpec((bk, bn), lambda i, j, kk: (kk, j), transforms=transforms)],
        out_specs=plgpu.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[plgpu.ACC((bm, bn), jnp.float32)],
        compiler_params=plgpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "sequential"), max_concurrent_steps=3),
    )(a, b)
