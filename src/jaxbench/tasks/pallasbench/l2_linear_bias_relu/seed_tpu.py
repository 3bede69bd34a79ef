"""Original TPU-style seed for l2_linear_bias_relu: (512, 512) output tiles, K in 512-wide steps.

Grid (M/bm, N/bn, K/bk) with K innermost ("arbitrary"): a float32 VMEM accumulator
collects the partial products; the last K step adds the bias tile and applies the ReLU
before storing. b is viewed as (1, N) so its (1, bn) block is lane-dense (1 equals the
full first dim). VMEM at full size: X, W and output blocks of 1 MiB each plus a 2 KiB bias
block, double-buffered (~6 MiB), and the 1 MiB accumulator: ~7 MiB, under the 32 MiB
scoped default.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _linear_bias_relu_kernel(x_ref, w_ref, b_ref, o_ref, acc_ref):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _store():
        o_ref[...] = jnp.maximum(acc_ref[...] + b_ref[...], 0).astype(o_ref.dtype)


def kernel(x, w, b):
    m, k = x.shape
    n = w.shape[1]
    bm, bn, bk = min(512, m), min(512, n), min(512, k)
    return pl.pallas_call(
        _linear_bias_relu_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
                  pl.BlockSpec((1, bn), lambda i, j, kk: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, w, b.reshape(1, n))
