"""Seed kernel for 33k_conv3d_mish_tanh on NVIDIA GPUs (Pallas Triton): direct 3-D convolution.

Each image is flattened to (C, D·H·W). Output voxel p = d·HW + h·W + w of tap (kd, kh, kw)
reads input voxel p + kd·HW + kh·W + kw, so each program computes a (bco, chunk) tile of
flat output voxels as a sum over the 27 taps of (bco, CI) x (CI, chunk) matmuls on shifted
slices of the flat image, in a float32 register accumulator, then applies bias, mish and
tanh. Wrap-around positions (h >= Ho or w >= Wo) are computed and dropped outside.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _round_up(a, b):
    return -(-a // b) * b


def _next_pow2(a):
    return 1 << max(0, (a - 1).bit_length())


def _conv_mish_tanh_kernel(x_ref, w_ref, b_ref, o_ref, *, offsets, chunk):
    base = pl.program_id(2) * chunk
    acc = jnp.zeros(o_ref.shape[1:], jnp.float32)            # (bco, chunk)
    for t, off in enumerate(offsets):
        xs = x_ref[0, :, pl.ds(base + off, chunk)]            # (cp, chunk)
        acc += jnp.dot(w_ref[t], xs, preferred_element_type=jnp.float32)
    y = acc + b_ref[...][:, None]
    softplus = jnp.maximum(y, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(y)))
    o_ref[0] = jnp.tanh(y * jnp.tanh(softplus)).astype(o_ref.dtype)


def kernel(x, weight, bias):
    n, ci, d, h, w = x.shape
    co, _, kd, kh, kw = weight.shape
    do, ho, wo = d - kd + 1, h - kh + 1, w - kw + 1
    s = h * w
    cp = max(16, _next_pow2(ci))
    bco = min(64, _next_pow2(co))
    cop = _round_up(co, bco)
    flat_out = do * s
    chunk = min(128, _next_pow2(flat_out))
    n_chunks = pl.cdiv(flat_out, chunk)
    offsets = tuple(a * s + b * w + c for a in range(kd) for b in range(kh) for c in range(kw))
    lin = n_chunks * chunk + offsets[-1]

    xf = jnp.pad(x.reshape(n, ci, d * s), ((0, 0), (0, cp - ci), (0, lin - d * s)))
    wt = jnp.pad(weight, ((0, cop - co), (0, cp - ci), (0, 0), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 4, 0, 1).reshape(kd * kh * kw, cop, cp)
    b = jnp.pad(bias.astype(jnp.float32), (0, cop - co))

    out = pl.pallas_call(
        functools.partial(_conv_mish_tanh_kernel, offsets=offsets, chunk=chunk),
        out_shape=jax.ShapeDtypeStruct((n, cop, n_chunks * chunk), x.dtype),
        grid=(n, cop // bco, n_chunks),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i, c, j: (i, 0, 0)),
            pl.BlockSpec((kd * kh * kw, bco, cp), lambda i, c, j: (0, c, 0)),
            pl.BlockSpec((bco,), lambda i, c, j: (c,)),
        ],
        out_specs=pl.BlockSpec((1, bco, chunk), lambda i, c, j: (i, c, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(xf, wt, b)
    return out[:, :co, :flat_out].reshape(n, co, do, h, w)[:, :, :, :ho, :wo]
