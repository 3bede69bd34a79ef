"""Seed kernel for 18k_conv2d_relu_biasadd on TPU: a direct convolution with a fused epilogue.

Each image is flattened to (C, H·W) (channels on sublanes, pixels on lanes). Output pixel
p = h·W + w of tap (kh, kw) reads input pixel p + kh·W + kw, so every tap is one
(CO, CI) x (CI, chunk) matmul on a lane-shifted window of the flat image (an aligned load
plus a lane rotation). Outputs are computed for all W columns of the Ho valid rows; the
W - Wo wrap-around columns are dropped outside. Grid (N, CO/bco, flat chunks); the whole
padded image block stays resident while its chunks are processed.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _round_up(a, b):
    return -(-a // b) * b


def _shifted(x_ref, base, off, chunk):
    """x_ref[0, :, base + off : base + off + chunk] via an aligned load and a lane rotation."""
    a, r = off // 128 * 128, off % 128
    if r == 0:
        return x_ref[0, :, pl.ds(base + a, chunk)]
    xw = x_ref[0, :, pl.ds(base + a, chunk + 128)]
    return pltpu.roll(xw, chunk + 128 - r, 1)[:, :chunk]


def _conv_relu_bias_kernel(x_ref, w_ref, cb_ref, b_ref, o_ref, *, offsets, chunk):
    base = pl.multiple_of(pl.program_id(2) * chunk, 128)
    acc = jnp.zeros(o_ref.shape[1:], jnp.float32)            # (bco, chunk)
    for t, off in enumerate(offsets):
        acc += jnp.dot(w_ref[t], _shifted(x_ref, base, off, chunk),
                       preferred_element_type=jnp.float32)
    y = jnp.maximum(acc + cb_ref[...], 0.0) + b_ref[...]
    o_ref[0] = y.astype(o_ref.dtype)


def kernel(x, weight, conv_bias, bias):
    n, ci, h, w = x.shape
    co, _, kh, kw = weight.shape
    ho, wo = h - kh + 1, w - kw + 1
    cp = _round_up(ci, 16)
    flat_out = ho * w
    chunk = min(1024, _round_up(flat_out, 128))
    n_chunks = pl.cdiv(flat_out, chunk)
    offsets = tuple(i * w + j for i in range(kh) for j in range(kw))
    lin = n_chunks * chunk + _round_up(offsets[-1], 128) + 128
    bco = min(128, co)

    xf = jnp.pad(x.reshape(n, ci, h * w), ((0, 0), (0, cp - ci), (0, lin - h * w)))
    wt = jnp.pad(weight, ((0, 0), (0, cp - ci), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 0, 1).reshape(kh * kw, co, cp)
    cb = conv_bias.reshape(co, 1).astype(jnp.float32)
    b = bias.reshape(co, 1).astype(jnp.float32)

    out = pl.pallas_call(
        functools.partial(_conv_relu_bias_kernel, offsets=offsets, chunk=chunk),
        out_shape=jax.ShapeDtypeStruct((n, co, n_chunks * chunk), x.dtype),
        grid=(n, co // bco, n_chunks),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i, c, j: (i, 0, 0)),
            pl.BlockSpec((kh * kw, bco, cp), lambda i, c, j: (0, c, 0)),
            pl.BlockSpec((bco, 1), lambda i, c, j: (c, 0)),
            pl.BlockSpec((bco, 1), lambda i, c, j: (c, 0)),
        ],
        out_specs=pl.BlockSpec((1, bco, chunk), lambda i, c, j: (i, c, j)),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel")),
    )(xf, wt, cb, b)
    return out[:, :, :flat_out].reshape(n, co, ho, w)[:, :, :, :wo]
