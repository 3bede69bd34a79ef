"""Seed kernel for 17p_triangle_multiplication on TPU: three tiled Pallas kernels.

1. Projection: for a tile of pair rows (flattened (N*N, C)), the four C x C matmuls,
   sigmoid gates and mask give `left` and `right` (bf16).
2. Triangle contraction: with left and right transposed (glue) to channel-major
   (C, N, N), t[c] = left[c] @ right[c]^T is a batch of N x N matmuls; grid
   (C/cb, N/bi, N/bj, N/bk) with the k axis innermost and sequential, a float32 VMEM
   accumulator, and a static loop over the cb channels of a block.
3. Epilogue: t transposed back to (N*N, C) (glue); per row tile the RMS norm over
   channels, center_scale, the output projection and the sigmoid gate from pair_act.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _projection_kernel(pair_ref, mask_ref, lp_ref, rp_ref, lg_ref, rg_ref, left_ref, right_ref):
    pair = pair_ref[...]
    mask = mask_ref[...]

    def gated(proj_ref, gate_ref):
        proj = jnp.dot(pair, proj_ref[...], preferred_element_type=jnp.float32)
        gate = jnp.dot(pair, gate_ref[...], preferred_element_type=jnp.float32)
        return mask * proj * jax.nn.sigmoid(gate)

    left_ref[...] = gated(lp_ref, lg_ref).astype(left_ref.dtype)
    right_ref[...] = gated(rp_ref, rg_ref).astype(right_ref.dtype)


def _triangle_kernel(left_ref, right_ref, t_ref, acc_ref, *, channels):
    kk = pl.program_id(3)

    @pl.when(kk == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    for c in range(channels):
        acc_ref[c] += jax.lax.dot_general(left_ref[c], right_ref[c], (((1,), (1,)), ((), ())),
                                          preferred_element_type=jnp.float32)

    @pl.when(kk == pl.num_programs(3) - 1)
    def _store():
        t_ref[...] = acc_ref[...]


def _epilogue_kernel(t_ref, pair_ref, scale_ref, op_ref, og_ref, o_ref):
    t = t_ref[...]
    u = t * jax.lax.rsqrt(jnp.mean(t * t, axis=1, keepdims=True) + 1e-6) * scale_ref[...]
    out = jnp.dot(u.astype(op_ref.dtype), op_ref[...], preferred_element_type=jnp.float32)
    gate = jnp.dot(pair_ref[...], og_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (out * jax.nn.sigmoid(gate)).astype(o_ref.dtype)


def kernel(pair_act, mask, left_proj, right_proj, left_gate, right_gate, center_scale,
           out_proj, out_gate):
    n, _, c = pair_act.shape
    rows = n * n
    dtype = pair_act.dtype
    pair = pair_act.reshape(rows, c)
    tm = min(2048, rows)
    row_spec = pl.BlockSpec((tm, c), lambda i: (i, 0))
    weight_spec = pl.BlockSpec((c, c), lambda i: (0, 0))
    row_params = pltpu.CompilerParams(dimension_semantics=("parallel",))

    left, right = pl.pallas_call(
        _projection_kernel,
        out_shape=[jax.ShapeDtypeStruct((rows, c), dtype)] * 2,
        grid=(rows // tm,),
        in_specs=[row_spec, pl.BlockSpec((tm, 1), lambda i: (i, 0))] + [weight_spec] * 4,
        out_specs=[row_spec, row_spec],
        compiler_params=row_params,
    )(pair, mask.reshape(rows, 1).astype(jnp.float32), left_proj, right_proj, left_gate, right_gate)

    left_t = left.reshape(n, n, c).transpose(2, 0, 1)
    right_t = right.reshape(n, n, c).transpose(2, 0, 1)
    cb, bi, bk = min(8, c), min(256, n), min(256, n)
    t = pl.pallas_call(
        functools.partial(_triangle_kernel, channels=cb),
        out_shape=jax.ShapeDtypeStruct((c, n, n), jnp.float32),
        grid=(c // cb, n // bi, n // bi, n // bk),
        in_specs=[
            pl.BlockSpec((cb, bi, bk), lambda ci, i, j, kk: (ci, i, kk)),
            pl.BlockSpec((cb, bi, bk), lambda ci, i, j, kk: (ci, j, kk)),
        ],
        out_specs=pl.BlockSpec((cb, bi, bi), lambda ci, i, j, kk: (ci, i, j)),
        scratch_shapes=[pltpu.VMEM((cb, bi, bi), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
    )(left_t, right_t)

    out = pl.pallas_call(
        _epilogue_kernel,
        out_shape=jax.ShapeDtypeStruct((rows, c), dtype),
        grid=(rows // tm,),
        in_specs=[row_spec, row_spec, pl.BlockSpec((1, c), lambda i: (0, 0)), weight_spec,
                  weight_spec],
        out_specs=row_spec,
        compiler_params=row_params,
    )(t.transpose(1, 2, 0).reshape(rows, c), pair,
      center_scale.astype(jnp.float32).reshape(1, c), out_proj, out_gate)
    return out.reshape(n, n, c)
