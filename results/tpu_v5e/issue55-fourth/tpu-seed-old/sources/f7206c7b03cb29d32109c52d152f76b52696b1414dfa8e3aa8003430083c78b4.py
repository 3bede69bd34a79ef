"""Seed kernel for 39k_conv2d_gelu_globalavgpool on TPU: conv + GELU + global average pool.

Each image is flattened to (C, H·W) (channels on sublanes, pixels on lanes); output pixel
p = h·W + w of tap (kh, kw) reads input pixel p + kh·W + kw, so every tap is a (bco, CI) x
(CI, chunk) matmul on a lane-shifted slice (aligned load plus lane rotation) of the image.
Grid (N, CO/bco): a step loops over its image's flat chunks, applies bias and exact GELU, and
accumulates the valid pixels (wrap-around columns w >= Wo masked) per channel; nothing but
the pooled (N, CO) result leaves the kernel.
"""

import functools
import math

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


def _conv_gelu_pool_kernel(x_ref, w_ref, b_ref, m_ref, o_ref, *, offsets, chunk, n_chunks,
                           count):
    bco = o_ref.shape[1]

    def body(j, s):
        base = pl.multiple_of(j * chunk, 128)
        acc = jnp.zeros((bco, chunk), jnp.float32)
        for t, off in enumerate(offsets):
            acc += jnp.dot(w_ref[t], _shifted(x_ref, base, off, chunk),
                           preferred_element_type=jnp.float32)
        y = acc + b_ref[...]
        g = 0.5 * y * (1.0 + jax.lax.erf(y * (1.0 / math.sqrt(2.0))))
        return s + jnp.sum(g * m_ref[:, pl.ds(base, chunk)], axis=1, keepdims=True)

    s = jax.lax.fori_loop(0, n_chunks, body, jnp.zeros((bco, 1), jnp.float32))
    o_ref[0] = s / count


def kernel(x, weight, bias):
    n, ci, h, w = x.shape
    co, _, kh, kw = weight.shape
    ho, wo = h - kh + 1, w - kw + 1
    cp = _round_up(ci, 16)
    flat_out = ho * w
    chunk = min(1024, _round_up(flat_out, 128))
    n_chunks = pl.cdiv(flat_out, chunk)
    lo = n_chunks * chunk
    offsets = tuple(i * w + j for i in range(kh) for j in range(kw))
    lin = lo + _round_up(offsets[-1], 128) + 128
    bco = min(64, co)

    xf = jnp.pad(x.reshape(n, ci, h * w), ((0, 0), (0, cp - ci), (0, lin - h * w)))
    wt = jnp.pad(weight, ((0, 0), (0, cp - ci), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 0, 1).reshape(kh * kw, co, cp)
    pos = jnp.arange(lo)
    mask = ((pos < flat_out) & (pos % w < wo)).astype(jnp.float32).reshape(1, lo)

    out = pl.pallas_call(
        functools.partial(_conv_gelu_pool_kernel, offsets=offsets, chunk=chunk,
                          n_chunks=n_chunks, count=float(ho * wo)),
        out_shape=jax.ShapeDtypeStruct((n, co, 1), jnp.float32),
        grid=(n, co // bco),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i, c: (i, 0, 0)),
            pl.BlockSpec((kh * kw, bco, cp), lambda i, c: (0, c, 0)),
            pl.BlockSpec((bco, 1), lambda i, c: (c, 0)),
            pl.BlockSpec((1, lo), lambda i, c: (0, 0)),
        ],
        out_specs=pl.BlockSpec((1, bco, 1), lambda i, c: (i, c, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(xf, wt, bias.reshape(co, 1).astype(jnp.float32), mask)
    return out[:, :, 0].astype(x.dtype)
