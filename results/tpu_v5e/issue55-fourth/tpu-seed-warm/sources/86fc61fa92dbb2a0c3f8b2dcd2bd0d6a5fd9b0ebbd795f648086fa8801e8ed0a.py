"""Seed kernel for 21k_gemm_divide_sum_scaling on TPU.

``sum_j((x @ W^T)[:, j] / 2) * 1.5`` for W in (out, in) layout. Grid (M/bm, N/bn, K/bk):
one row block per "parallel" step, while both the N and the K axes are sequential
("arbitrary"). Since only row sums are needed, one float32 (bm, bn) VMEM accumulator
collects every (j, k) tile product; on the last step its lanes are summed per row and
scaled by 1.5 / 2, giving the (bm, 1) output block.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NT = (((1,), (1,)), ((), ()))  # contract the K axis of x (bm, bk) with that of W (bn, bk)


def _kernel(x_ref, w_ref, o_ref, acc_ref):
    j, k = pl.program_id(1), pl.program_id(2)

    @pl.when((j == 0) & (k == 0))
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when((j == pl.num_programs(1) - 1) & (k == pl.num_programs(2) - 1))
    def _store():
        row_sum = jnp.sum(acc_ref[...], axis=1, keepdims=True)
        o_ref[...] = (row_sum * (1.5 / 2.0)).astype(o_ref.dtype)


def kernel(x, w):
    m, k = x.shape
    n = w.shape[0]
    bm, bn, bk = min(256, m), min(256, n), min(256, k)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, 1), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk)),
        ],
        out_specs=pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary", "arbitrary")),
    )(x, w)
