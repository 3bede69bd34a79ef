"""Seed kernel for 34k_conv2d_activation_batchnorm on TPU: conv + mish + BatchNorm (train).

Two kernels, since batch statistics span every image. (1) Direct convolution: each image is
flattened to (C, H·W) (channels on sublanes, pixels on lanes); output pixel p = h·W + w of tap
(kh, kw) reads input pixel p + kh·W + kw, so every tap is a (bco, CI) x (CI, chunk) matmul on
a lane-shifted slice (aligned load plus lane rotation). Grid (N, CO/bco); a step convolves its
image chunk by chunk, applies bias and tanh(softplus(y))·y, writes the float32 activation and
reduces its valid pixels (wrap-around columns w >= Wo masked) to a per-image channel mean and
sum of squared deviations. The per-image statistics are merged outside (N·CO scalars, Chan's
formula). (2) Normalise + affine, reading the (H', W) activation planes and writing the
(Ho, Wo) output directly.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
EPS = 1e-5


def _round_up(a, b):
    return -(-a // b) * b


def _shifted(x_ref, base, off, chunk):
    """x_ref[0, :, base + off : base + off + chunk] via an aligned load and a lane rotation."""
    a, r = off // 128 * 128, off % 128
    if r == 0:
        return x_ref[0, :, pl.ds(base + a, chunk)]
    xw = x_ref[0, :, pl.ds(base + a, chunk + 128)]
    return pltpu.roll(xw, chunk + 128 - r, 1)[:, :chunk]


def _conv_act_stats_kernel(x_ref, w_ref, cb_ref, m_ref, y_ref, mean_ref, m2_ref, *,
                           offsets, chunk, n_chunks, count):
    bco = y_ref.shape[1]
    zeros = jnp.zeros((bco, 1), jnp.float32)

    def conv_pass(j, s1):
        base = pl.multiple_of(j * chunk, 128)
        acc = jnp.zeros((bco, chunk), jnp.float32)
        for t, off in enumerate(offsets):
            acc += jnp.dot(w_ref[t], _shifted(x_ref, base, off, chunk),
                           preferred_element_type=jnp.float32)
        y = acc + cb_ref[...]
        softplus = jnp.maximum(y, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(y)))
        a = jnp.tanh(softplus) * y
        y_ref[0, :, pl.ds(base, chunk)] = a
        return s1 + jnp.sum(a * m_ref[:, pl.ds(base, chunk)], axis=1, keepdims=True)

    mean = jax.lax.fori_loop(0, n_chunks, conv_pass, zeros) / count

    def var_pass(j, s2):
        base = pl.multiple_of(j * chunk, 128)
        dev = (y_ref[0, :, pl.ds(base, chunk)] - mean) * m_ref[:, pl.ds(base, chunk)]
        return s2 + jnp.sum(dev * dev, axis=1, keepdims=True)

    mean_ref[0] = mean
    m2_ref[0] = jax.lax.fori_loop(0, n_chunks, var_pass, zeros)


def _bn_kernel(y_ref, sc_ref, sh_ref, o_ref):
    _, _, ho, wo = o_ref.shape
    y = y_ref[0, :, :ho, :wo]
    o_ref[0] = (y * sc_ref[...] + sh_ref[...]).astype(o_ref.dtype)


def kernel(x, weight, conv_bias, bn_weight, bn_bias):
    n, ci, h, w = x.shape
    co, _, kh, kw = weight.shape
    ho, wo = h - kh + 1, w - kw + 1
    cp = _round_up(ci, 16)
    flat_out = ho * w
    chunk = min(1024, _round_up(flat_out, max(128, w)))
    n_chunks = pl.cdiv(flat_out, chunk)
    lo = n_chunks * chunk           # a multiple of w: the planes reshape to (lo // w, w)
    offsets = tuple(i * w + j for i in range(kh) for j in range(kw))
    lin = lo + _round_up(offsets[-1], 128) + 128
    bco = min(64, co)
    count = ho * wo

    xf = jnp.pad(x.reshape(n, ci, h * w), ((0, 0), (0, cp - ci), (0, lin - h * w)))
    wt = jnp.pad(weight, ((0, 0), (0, cp - ci), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 0, 1).reshape(kh * kw, co, cp)
    pos = jnp.arange(lo)
    mask = ((pos < flat_out) & (pos % w < wo)).astype(jnp.float32).reshape(1, lo)

    y, mean, m2 = pl.pallas_call(
        functools.partial(_conv_act_stats_kernel, offsets=offsets, chunk=chunk,
                          n_chunks=n_chunks, count=float(count)),
        out_shape=(jax.ShapeDtypeStruct((n, co, lo), jnp.float32),
                   jax.ShapeDtypeStruct((n, co, 1), jnp.float32),
                   jax.ShapeDtypeStruct((n, co, 1), jnp.float32)),
        grid=(n, co // bco),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i, c: (i, 0, 0)),
            pl.BlockSpec((kh * kw, bco, cp), lambda i, c: (0, c, 0)),
            pl.BlockSpec((bco, 1), lambda i, c: (c, 0)),
            pl.BlockSpec((1, lo), lambda i, c: (0, 0)),
        ],
        out_specs=(pl.BlockSpec((1, bco, lo), lambda i, c: (i, c, 0)),
                   pl.BlockSpec((1, bco, 1), lambda i, c: (i, c, 0)),
                   pl.BlockSpec((1, bco, 1), lambda i, c: (i, c, 0))),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel"), vmem_limit_bytes=48 * 1024 * 1024),
    )(xf, wt, conv_bias.reshape(co, 1).astype(jnp.float32), mask)

    # Merge the per-image statistics (Chan et al.): N·CO scalars.
    mean, m2 = mean[:, :, 0], m2[:, :, 0]
    tot_mean = mean.mean(axis=0)
    tot_var = (m2.sum(axis=0) + count * ((mean - tot_mean) ** 2).sum(axis=0)) / (n * count)
    scale = bn_weight.astype(jnp.float32) * jax.lax.rsqrt(tot_var + EPS)
    shift = bn_bias.astype(jnp.float32) - tot_mean * scale

    bcb = min(8, co)
    rows = lo // w
    return pl.pallas_call(
        _bn_kernel,
        out_shape=jax.ShapeDtypeStruct((n, co, ho, wo), x.dtype),
        grid=(n, co // bcb),
        in_specs=[pl.BlockSpec((1, bcb, rows, w), lambda i, c: (i, c, 0, 0)),
                  pl.BlockSpec((bcb, 1, 1), lambda i, c: (c, 0, 0)),
                  pl.BlockSpec((bcb, 1, 1), lambda i, c: (c, 0, 0))],
        out_specs=pl.BlockSpec((1, bcb, ho, wo), lambda i, c: (i, c, 0, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(y.reshape(n, co, rows, w), scale.reshape(co, 1, 1), shift.reshape(co, 1, 1))
