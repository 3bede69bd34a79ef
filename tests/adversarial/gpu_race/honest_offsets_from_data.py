"""Honest but unprovable (14p_ragged_dot, GPU): the kernel of
legit/kernels/gpu_ragged_rows_masked.py with its sub-group offsets passed through the data
(``+ min(|x[0, 0, 0]|, 0)``, always 0 for finite inputs). Programs share one output block and
store masked rows whose bounds the judge cannot evaluate: the race rule cannot decide, so the
verdict is `unverified` at `lower`, naming why, never `incorrect`."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BM, BN, BK = 64, 128, 64
CUTS = (0, 40, 72)  # each group's rows are cut here: sub-groups of uneven size


def _kernel(x_ref, w_ref, lo_ref, hi_ref, o_ref, *, k):
    lo, hi = lo_ref[...], hi_ref[...]
    start = lo + pl.program_id(1) * BM

    @pl.when(start < hi)
    def _():
        rows = pl.ds(start, BM)
        keep = (start + jnp.arange(BM)) < hi

        def step(kk, acc):
            a = plgpu.load(x_ref.at[rows, pl.ds(kk * BK, BK)], mask=keep[:, None], other=0.0)
            return acc + jnp.dot(a, w_ref[pl.ds(kk * BK, BK), :],
                                 preferred_element_type=jnp.float32)

        acc = lax.fori_loop(0, k // BK, step, jnp.zeros((BM, BN), jnp.float32))
        plgpu.store(o_ref.at[rows], acc.astype(o_ref.dtype), mask=keep[:, None])


def kernel(x, weights):
    g, m, k = x.shape
    n = weights.shape[2]
    cuts = [c for c in CUTS if c < m]
    starts = np.array([gi * m + c for gi in range(g) for c in cuts], np.int32)
    ends = np.append(starts[1:], g * m).astype(np.int32)
    nothing = jnp.minimum(jnp.abs(x[0, 0, 0]), 0).astype(jnp.int32)  # 0, but read from data
    lo, hi = jnp.asarray(starts) + nothing, jnp.asarray(ends) + nothing
    per = len(cuts)
    out = pl.pallas_call(
        functools.partial(_kernel, k=k),
        out_shape=jax.ShapeDtypeStruct((g * m, n), x.dtype),
        grid=(len(starts), pl.cdiv(m, BM), n // BN),
        in_specs=[pl.BlockSpec((g * m, k), lambda s, i, j: (0, 0)),
                  pl.BlockSpec((None, k, BN), lambda s, i, j: (s // per, 0, j)),
                  pl.BlockSpec((None,), lambda s, i, j: (s,)),
                  pl.BlockSpec((None,), lambda s, i, j: (s,))],
        out_specs=pl.BlockSpec((g * m, BN), lambda s, i, j: (0, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(x.reshape(g * m, k), weights, lo, hi)
    return out.reshape(g, m, n)
