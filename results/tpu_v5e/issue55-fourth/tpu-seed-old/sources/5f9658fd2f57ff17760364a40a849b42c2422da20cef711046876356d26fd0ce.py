"""Seed kernel for 28k_convtranspose3d_layernorm_gelu_scaling on TPU.

Transposed convolution, stride 2, padding 1, kernel 4, by sub-pixel decomposition: along
each axis, output 2m + r gets input m (tap 1) and m - 1 (tap 3) for r = 0, and input m + 1
(tap 0) and m (tap 2) for r = 1. So each of the 8 output parities (rd, rh, rw) is an
ordinary stride-1 convolution with 2x2x2 taps of the input padded by one voxel per side.

Kernel 1: each padded image is flattened to (CI, (D+2)(H+2)(W+2)) (channels on sublanes,
voxels on lanes); output voxel p of parity class, tap offset o reads input voxel p + o, so
every tap is a (bco, CI) x (CI, chunk) matmul on a lane-shifted slice (aligned load plus lane
rotation). A grid step (image, channel block, chunk) computes all 8 parities (64 taps) in
float32. Outside, the parities are interleaved into the (N, CO, 2D, 2H, 2W) layout (a
transpose: data movement only). Kernel 2: LayerNorm over the last axis, affine, the conv
bias of the block's channel (added after the norm), exact GELU, x1.0, over (1, rows, 2W)
blocks of the (N·CO, 2D·2H, 2W) view, so each block belongs to one channel.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
EPS = 1e-5
# Per axis and output parity: (kernel tap, input offset into the 1-padded input).
TAPS = (((1, 1), (3, 0)), ((0, 2), (2, 1)))


def _round_up(a, b):
    return -(-a // b) * b


def _shifted(x_ref, base, off, chunk):
    """x_ref[0, :, base + off : base + off + chunk] via an aligned load and a lane rotation."""
    a, r = off // 128 * 128, off % 128
    if r == 0:
        return x_ref[0, :, pl.ds(base + a, chunk)]
    xw = x_ref[0, :, pl.ds(base + a, chunk + 128)]
    return pltpu.roll(xw, chunk + 128 - r, 1)[:, :chunk]


def _convt_kernel(x_ref, w_ref, o_ref, *, parity_offsets, chunk):
    base = pl.multiple_of(pl.program_id(2) * chunk, 128)
    for p, offsets in enumerate(parity_offsets):
        acc = jnp.zeros(o_ref.shape[2:], jnp.float32)         # (bco, chunk)
        for t, off in enumerate(offsets):
            acc += jnp.dot(w_ref[p, t], _shifted(x_ref, base, off, chunk),
                           preferred_element_type=jnp.float32)
        o_ref[0, p] = acc


def _ln_gelu_kernel(y_ref, g_ref, b_ref, cb_ref, o_ref):
    y = y_ref[0]                                                  # (br, 2W), one channel
    mean = jnp.mean(y, axis=1, keepdims=True)
    dev = y - mean
    var = jnp.mean(dev * dev, axis=1, keepdims=True)
    z = dev * jax.lax.rsqrt(var + EPS) * g_ref[...] + b_ref[...] + cb_ref[0]
    out = 0.5 * z * (1.0 + jax.lax.erf(z * (1.0 / math.sqrt(2.0))))
    o_ref[0] = (out * 1.0).astype(o_ref.dtype)


def kernel(x, weight, conv_bias, ln_weight, ln_bias):
    n, ci, d, h, w = x.shape
    _, co, k, _, _ = weight.shape
    wp = w + 2
    s = (h + 2) * wp
    cp = _round_up(ci, 16)
    flat_out = d * s
    chunk = min(1024, _round_up(flat_out, 128))
    n_chunks = pl.cdiv(flat_out, chunk)
    lo = n_chunks * chunk
    lin = lo + _round_up(2 * s + 2 * wp + 2, 128) + 128
    bco = min(64, co)

    xp = jnp.pad(x, ((0, 0), (0, cp - ci), (1, 1), (1, 1), (1, 1)))
    xf = jnp.pad(xp.reshape(n, cp, (d + 2) * s), ((0, 0), (0, 0), (0, lin - (d + 2) * s)))
    wpad = jnp.pad(weight, ((0, cp - ci), (0, 0), (0, 0), (0, 0), (0, 0)))
    parity_offsets, w_taps = [], []
    for rd in range(2):
        for rh in range(2):
            for rw in range(2):
                offs, mats = [], []
                for kd, od in TAPS[rd]:
                    for kh, oh in TAPS[rh]:
                        for kw, ow in TAPS[rw]:
                            offs.append(od * s + oh * wp + ow)
                            mats.append(wpad[:, :, kd, kh, kw].T)        # (co, cp)
                parity_offsets.append(tuple(offs))
                w_taps.append(jnp.stack(mats))
    wt = jnp.stack(w_taps)                                               # (8, 8, co, cp)

    y8 = pl.pallas_call(
        functools.partial(_convt_kernel, parity_offsets=tuple(parity_offsets), chunk=chunk),
        out_shape=jax.ShapeDtypeStruct((n, 8, co, lo), jnp.float32),
        grid=(n, co // bco, n_chunks),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i, c, j: (i, 0, 0)),
            pl.BlockSpec((8, 8, bco, cp), lambda i, c, j: (0, 0, c, 0)),
        ],
        out_specs=pl.BlockSpec((1, 8, bco, chunk), lambda i, c, j: (i, 0, c, j)),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel")),
    )(xf, wt)

    # Interleave the parities: (n, rd, rh, rw, co, d, h, w) -> (n, co, d, rd, h, rh, w, rw).
    y = y8[:, :, :, :flat_out].reshape(n, 2, 2, 2, co, d, h + 2, wp)[..., :h, :w]
    rows = 2 * d * 2 * h                                                 # rows per (image, channel)
    y = y.transpose(0, 4, 5, 1, 6, 2, 7, 3).reshape(n * co, rows, 2 * w)

    br = math.gcd(rows, 1024)
    vec = lambda v: v.reshape(1, -1).astype(jnp.float32)  # noqa: E731
    out = pl.pallas_call(
        _ln_gelu_kernel,
        out_shape=jax.ShapeDtypeStruct((n * co, rows, 2 * w), x.dtype),
        grid=(n * co, rows // br),
        in_specs=[pl.BlockSpec((1, br, 2 * w), lambda g, r: (g, r, 0)),
                  pl.BlockSpec((1, 2 * w), lambda g, r: (0, 0)),
                  pl.BlockSpec((1, 2 * w), lambda g, r: (0, 0)),
                  pl.BlockSpec((1, 1, 1), lambda g, r: (g % co, 0, 0))],
        out_specs=pl.BlockSpec((1, br, 2 * w), lambda g, r: (g, r, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(y, vec(ln_weight), vec(ln_bias), conv_bias.reshape(co, 1, 1).astype(jnp.float32))
    return out.reshape(n, co, 2 * d, 2 * h, 2 * w)
