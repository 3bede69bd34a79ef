"""Seed kernel for 17p_triangle_multiplication on NVIDIA GPUs (Pallas Triton backend).

1. Projection: per tile of pair rows (flattened (N*N, C)), the four C x C matmuls,
   sigmoid gates and mask give `left` and `right` (bf16).
2. Triangle contraction: left and right are transposed (glue) to channel-major
   (C, N, N); each program computes one (bi, bj) tile of t[c] = left[c] @ right[c]^T,
   looping over k with a float32 register accumulator.
3. Epilogue: t transposed back to (N*N, C) (glue); per row tile the RMS norm over
   channels, center_scale, the output projection and the sigmoid gate from pair_act.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _projection_kernel(pair_ref, mask_ref, lp_ref, rp_ref, lg_ref, rg_ref, left_ref, right_ref):
    pair = pair_ref[...]
    mask = mask_ref[...]

    def gated(proj_ref, gate_ref):
        proj = jnp.dot(pair, proj_ref[...], preferred_element_type=jnp.float32)
        gate = jnp.dot(pair, gate_ref[...], preferred_element_type=jnp.float32)
        return mask[:, None] * proj * jax.nn.sigmoid(gate)

    left_ref[...] = gated(lp_ref, lg_ref).astype(left_ref.dtype)
    right_ref[...] = gated(rp_ref, rg_ref).astype(right_ref.dtype)


def _triangle_kernel(left_ref, right_ref, t_ref, *, bk, num_k):
    def body(step, acc):
        a = left_ref[:, pl.ds(step * bk, bk)]
        b = right_ref[:, pl.ds(step * bk, bk)]
        return acc + jax.lax.dot_general(a, b, (((1,), (1,)), ((), ())),
                                         preferred_element_type=jnp.float32)

    t_ref[...] = jax.lax.fori_loop(0, num_k, body, jnp.zeros(t_ref.shape, jnp.float32))


def _epilogue_kernel(t_ref, pair_ref, scale_ref, op_ref, og_ref, o_ref):
    t = t_ref[...]
    u = t * jax.lax.rsqrt(jnp.mean(t * t, axis=1, keepdims=True) + 1e-6) * scale_ref[...][None, :]
    out = jnp.dot(u.astype(op_ref.dtype), op_ref[...], preferred_element_type=jnp.float32)
    gate = jnp.dot(pair_ref[...], og_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (out * jax.nn.sigmoid(gate)).astype(o_ref.dtype)


def kernel(pair_act, mask, left_proj, right_proj, left_gate, right_gate, center_scale,
           out_proj, out_gate):
    n, _, c = pair_act.shape
    rows = n * n
    dtype = pair_act.dtype
    pair = pair_act.reshape(rows, c)
    tm = min(128, rows)
    row_spec = pl.BlockSpec((tm, c), lambda i: (i, 0))
    weight_spec = pl.BlockSpec((c, c), lambda i: (0, 0))
    params = plgpu.CompilerParams(num_warps=4, num_stages=2)

    left, right = pl.pallas_call(
        _projection_kernel,
        out_shape=[jax.ShapeDtypeStruct((rows, c), dtype)] * 2,
        grid=(rows // tm,),
        in_specs=[row_spec, pl.BlockSpec((tm,), lambda i: (i,))] + [weight_spec] * 4,
        out_specs=[row_spec, row_spec],
        compiler_params=params,
    )(pair, mask.reshape(rows).astype(jnp.float32), left_proj, right_proj, left_gate, right_gate)

    left_t = left.reshape(n, n, c).transpose(2, 0, 1)
    right_t = right.reshape(n, n, c).transpose(2, 0, 1)
    bi, bk = min(128, n), min(32, n)
    t = pl.pallas_call(
        functools.partial(_triangle_kernel, bk=bk, num_k=n // bk),
        out_shape=jax.ShapeDtypeStruct((c, n, n), jnp.float32),
        grid=(c, n // bi, n // bi),
        in_specs=[
            pl.BlockSpec((None, bi, n), lambda ci, i, j: (ci, i, 0)),
            pl.BlockSpec((None, bi, n), lambda ci, i, j: (ci, j, 0)),
        ],
        out_specs=pl.BlockSpec((None, bi, bi), lambda ci, i, j: (ci, i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=8, num_stages=3),
    )(left_t, right_t)

    out = pl.pallas_call(
        _epilogue_kernel,
        out_shape=jax.ShapeDtypeStruct((rows, c), dtype),
        grid=(rows // tm,),
        in_specs=[row_spec, row_spec, pl.BlockSpec((c,), lambda i: (0,)), weight_spec,
                  weight_spec],
        out_specs=row_spec,
        compiler_params=params,
    )(t.transpose(1, 2, 0).reshape(rows, c), pair, center_scale.astype(jnp.float32),
      out_proj, out_gate)
    return out.reshape(n, n, c)
