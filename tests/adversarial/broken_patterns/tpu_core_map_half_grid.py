"""Broken (tests/legit/kernels/tpu_core_map_pipeline.py): the pipeline's grid covers half the
rows, so the other half of the output is never written."""
import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
BM, BN = 128, 512


def kernel(x, y):
    m, n = x.shape
    bm, bn = min(BM, m), min(BN, n)
    mesh = pltpu.create_tensorcore_mesh("core")

    def add_blocks(x_vmem, y_vmem, o_vmem):
        o_vmem[...] = x_vmem[...] + y_vmem[...]

    @pl.kernel(out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), mesh=mesh)
    def add(x_hbm, y_hbm, o_hbm):
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        pltpu.emit_pipeline(add_blocks, grid=(max(1, m // bm // 2), n // bn), in_specs=[spec, spec],
                            out_specs=spec,
                            dimension_semantics=(pltpu.PARALLEL, pltpu.ARBITRARY),
                            )(x_hbm, y_hbm, o_hbm)

    return add(x, y)
