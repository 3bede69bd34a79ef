"""11p_megablox_gmm on a GPU, written as Tokamax's Triton ragged dot is: the group offsets are
the exclusive cumsum of the task's `group_sizes` (computed outside the kernel from an input);
grid (group, row block, column block); every program of a column holds the whole
(M + BM, BN) output column and stores its group's rows of it, masked at the group's end. The
store locations depend on the inputs: the race rule decides them on each trial's inputs."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
BM, BN, BK = 32, 128, 64


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

        acc = jax.lax.fori_loop(0, k // BK, step, jnp.zeros((BM, BN), jnp.float32))
        plgpu.store(o_ref.at[rows], acc.astype(o_ref.dtype), mask=keep[:, None])


def group_bounds(group_sizes):
    ends = jnp.cumsum(group_sizes).astype(jnp.int32)
    return ends - group_sizes.astype(jnp.int32), ends


def kernel(lhs, rhs, group_sizes):
    m, k = lhs.shape
    e, _, n = rhs.shape
    lo, hi = group_bounds(group_sizes)
    padded = jnp.pad(lhs, ((0, BM), (0, 0)))  # a block that starts near the end stays inside
    out = pl.pallas_call(
        functools.partial(_kernel, k=k),
        out_shape=jax.ShapeDtypeStruct((m + BM, n), lhs.dtype),
        grid=(e, pl.cdiv(m, BM), n // BN),
        in_specs=[pl.BlockSpec((m + BM, k), lambda g, i, j: (0, 0)),
                  pl.BlockSpec((None, k, BN), lambda g, i, j: (g, 0, j)),
                  pl.BlockSpec((None,), lambda g, i, j: (g,)),
                  pl.BlockSpec((None,), lambda g, i, j: (g,))],
        out_specs=pl.BlockSpec((m + BM, BN), lambda g, i, j: (0, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(padded, rhs, lo, hi)
    return out[:m]
