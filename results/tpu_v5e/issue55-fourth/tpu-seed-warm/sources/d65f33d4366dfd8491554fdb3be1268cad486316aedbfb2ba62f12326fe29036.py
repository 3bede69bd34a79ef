"""Seed kernel for 23k_matmul_sum_max_avgpool_logsumexp_logsumexp on TPU.

``v = sum_j (x @ W^T + b)[:, j]``; the max, mean and two logsumexps that follow act on
a size-1 axis and are the identity, so out = v. Grid (M/bm, N/bn, K/bk) with the N and
K axes sequential ("arbitrary"): one float32 (bm, bn) VMEM accumulator collects every
tile product plus the bias tile (added once per N block), and on the last step its
lanes are summed per row into the (bm, 1) output block.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

_NT = (((1,), (1,)), ((), ()))  # contract the K axis of x (bm, bk) with that of W (bn, bk)


def _kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
    j, k = pl.program_id(1), pl.program_id(2)

    @pl.when((j == 0) & (k == 0))
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    @pl.when(k == 0)
    def _bias():
        acc_ref[...] += b_ref[...].astype(jnp.float32)

    acc_ref[...] += jax.lax.dot_general(x_ref[...], w_ref[...], _NT,
                                        preferred_element_type=jnp.float32)

    @pl.when((j == pl.num_programs(1) - 1) & (k == pl.num_programs(2) - 1))
    def _store():
        v = jnp.sum(acc_ref[...], axis=1, keepdims=True)
        # max / mean / logsumexp / logsumexp over a size-1 axis: identities.
        o_ref[...] = v.astype(o_ref.dtype)


def kernel(x, w, b):
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
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "arbitrary", "arbitrary")),
    )(x, w, b.reshape(1, n))
