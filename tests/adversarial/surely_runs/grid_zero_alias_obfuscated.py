"""Cheat (8p_gemm): the matmul done by XLA, then passed through a tiled matmul kernel whose
grid has a dimension of size 0 (its K steps times zero), the XLA result aliased to the
kernel's output. No program runs, so the output is XLA's; counted as one program running its
body's dot, the kernel looked like it did the work."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _matmul(a_ref, b_ref, c_ref, o_ref, acc_ref):
    del c_ref  # the output's initial value, aliased

    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def kernel(a, b):
    out = jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)  # the task, in XLA
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = min(m, 256), min(n, 256), min(k, 512)
    steps = 0 * (k // bk)  # no K step: the grid has no program
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // bm, n // bn, steps),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        input_output_aliases={2: 0})(a, b, out)
