"""Seed kernel for 46k (conv2d, GroupNorm, tanh, hardswish, residual add, logsumexp) on TPU.

Each image is flattened to (C, H·W) (channels on sublanes, pixels on lanes); output pixel
p = h·W + w of tap (kh, kw) reads input pixel p + kh·W + kw, so every tap is a (CO, CI) x
(CI, chunk) matmul on a lane-shifted slice (aligned load plus lane rotation) of the image.

Grid (N,): a step owns a whole image and all channels, as both the group statistics and the
channel logsumexp need them. Pass 1 convolves chunk by chunk into a float32 VMEM copy of
c = conv + bias and sums each channel's valid pixels (wrap-around columns w >= Wo masked);
group sums come from a (CO, CO) same-group matrix. Pass 2 sums squared deviations from the
group mean. Pass 3 computes t = tanh(GN(c)), z = c + hardswish(t) and the logsumexp of z over
the channel (sublane) axis, writing one lane-dense row per chunk.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
GROUPS = 16
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


def _group_total(g_ref, col):
    """Per-channel column -> the sum over the channel's group, via the same-group matrix."""
    wide = jnp.broadcast_to(col, (col.shape[0], 128))
    return jnp.dot(g_ref[...], wide, preferred_element_type=jnp.float32)[:, :1]


def _kernel(x_ref, w_ref, cb_ref, gw_ref, gb_ref, g_ref, m_ref, o_ref, c_ref, *,
            offsets, chunk, n_chunks, group_count):
    co = c_ref.shape[0]
    zeros = jnp.zeros((co, 1), jnp.float32)

    def conv_pass(j, s1):
        base = pl.multiple_of(j * chunk, 128)
        acc = jnp.zeros((co, chunk), jnp.float32)
        for t, off in enumerate(offsets):
            acc += jnp.dot(w_ref[t], _shifted(x_ref, base, off, chunk),
                           preferred_element_type=jnp.float32)
        c = acc + cb_ref[...]
        c_ref[:, pl.ds(base, chunk)] = c
        return s1 + jnp.sum(c * m_ref[:, pl.ds(base, chunk)], axis=1, keepdims=True)

    s1 = jax.lax.fori_loop(0, n_chunks, conv_pass, zeros)
    mean = _group_total(g_ref, s1) / group_count

    def var_pass(j, s2):
        base = pl.multiple_of(j * chunk, 128)
        dev = (c_ref[:, pl.ds(base, chunk)] - mean) * m_ref[:, pl.ds(base, chunk)]
        return s2 + jnp.sum(dev * dev, axis=1, keepdims=True)

    var = _group_total(g_ref, jax.lax.fori_loop(0, n_chunks, var_pass, zeros)) / group_count
    scale = gw_ref[...] * jax.lax.rsqrt(var + EPS)
    shift = gb_ref[...] - mean * scale

    def out_pass(j, carry):
        base = pl.multiple_of(j * chunk, 128)
        c = c_ref[:, pl.ds(base, chunk)]
        t = jnp.tanh(c * scale + shift)
        z = c + t * jnp.clip(t + 3.0, 0.0, 6.0) * (1.0 / 6.0)
        zmax = jnp.max(z, axis=0, keepdims=True)
        lse = zmax + jnp.log(jnp.sum(jnp.exp(z - zmax), axis=0, keepdims=True))
        o_ref[0, :, pl.ds(base, chunk)] = lse.astype(o_ref.dtype)
        return carry

    jax.lax.fori_loop(0, n_chunks, out_pass, 0)


def kernel(x, weight, conv_bias, gn_weight, gn_bias):
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
    cpg = co // GROUPS

    xf = jnp.pad(x.reshape(n, ci, h * w), ((0, 0), (0, cp - ci), (0, lin - h * w)))
    wt = jnp.pad(weight, ((0, 0), (0, cp - ci), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 0, 1).reshape(kh * kw, co, cp)
    col = lambda v: v.reshape(co, 1).astype(jnp.float32)  # noqa: E731
    grp = jnp.arange(co) // cpg
    same_group = (grp[:, None] == grp[None, :]).astype(jnp.float32)
    pos = jnp.arange(lo)
    mask = ((pos < flat_out) & (pos % w < wo)).astype(jnp.float32).reshape(1, lo)
    chan = pl.BlockSpec((co, 1), lambda i: (0, 0))

    out = pl.pallas_call(
        functools.partial(_kernel, offsets=offsets, chunk=chunk, n_chunks=n_chunks,
                          group_count=float(cpg * ho * wo)),
        out_shape=jax.ShapeDtypeStruct((n, 1, lo), x.dtype),
        grid=(n,),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i: (i, 0, 0)),
            pl.BlockSpec((kh * kw, co, cp), lambda i: (0, 0, 0)),
            chan, chan, chan,
            pl.BlockSpec((co, co), lambda i: (0, 0)),
            pl.BlockSpec((1, lo), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((1, 1, lo), lambda i: (i, 0, 0)),
        scratch_shapes=[pltpu.VMEM((co, lo), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel",), vmem_limit_bytes=48 * 1024 * 1024),
    )(xf, wt, col(conv_bias), col(gn_weight), col(gn_bias), same_group, mask)
    return out[:, :, :flat_out].reshape(n, 1, ho, w)[:, :, :, :wo]
