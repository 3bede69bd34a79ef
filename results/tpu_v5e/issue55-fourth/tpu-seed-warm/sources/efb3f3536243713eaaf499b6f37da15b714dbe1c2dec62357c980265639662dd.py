"""Seed kernel for 33k_conv3d_mish_tanh on TPU: a direct 3-D convolution, fused mish and tanh.

Each image is flattened to (C, D·H·W) (channels on sublanes, voxels on lanes). Output voxel
p = d·HW + h·W + w of tap (kd, kh, kw) reads input voxel p + kd·HW + kh·W + kw, so each tap
is a (bco, CI) x (CI, chunk) matmul on a lane-shifted slice of the flat image (an aligned
load plus a lane rotation). Outputs are computed for all H·W positions of the Do valid
depth slices; wrap-around positions (h >= Ho or w >= Wo) are dropped outside.

Grid (N, CO/bco, depth bands of TD slices). A band's input is its own TD slices plus the
next three (three one-slice halo blocks of the same array), copied into one VMEM window.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

HALO = 3  # depth slices read past a band: kd <= 2 plus the kh/kw overflow into the next one


def _round_up(a, b):
    return -(-a // b) * b


def _shifted(win_ref, base, off, chunk):
    """win_ref[:, base + off : base + off + chunk] via an aligned load and a lane rotation."""
    a, r = off // 128 * 128, off % 128
    if r == 0:
        return win_ref[:, pl.ds(base + a, chunk)]
    xw = win_ref[:, pl.ds(base + a, chunk + 128)]
    return pltpu.roll(xw, chunk + 128 - r, 1)[:, :chunk]


def _conv_mish_tanh_kernel(x_ref, h0_ref, h1_ref, h2_ref, w_ref, b_ref, o_ref, win_ref, *,
                           offsets, chunk, band, slice_len):
    win_ref[:, :band] = x_ref[0]
    for k, h_ref in enumerate((h0_ref, h1_ref, h2_ref)):
        win_ref[:, band + k * slice_len:band + (k + 1) * slice_len] = h_ref[0]
    win_ref[:, band + HALO * slice_len:] = jnp.zeros(
        (win_ref.shape[0], win_ref.shape[1] - band - HALO * slice_len), win_ref.dtype)

    def body(j, carry):
        base = pl.multiple_of(j * chunk, 128)
        acc = jnp.zeros((o_ref.shape[1], chunk), jnp.float32)
        for t, off in enumerate(offsets):
            acc += jnp.dot(w_ref[t], _shifted(win_ref, base, off, chunk),
                           preferred_element_type=jnp.float32)
        y = acc + b_ref[...]
        softplus = jnp.maximum(y, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(y)))
        o_ref[0, :, pl.ds(base, chunk)] = jnp.tanh(y * jnp.tanh(softplus)).astype(o_ref.dtype)
        return carry

    jax.lax.fori_loop(0, band // chunk, body, 0)


def kernel(x, weight, bias):
    n, ci, d, h, w = x.shape
    co, _, kd, kh, kw = weight.shape
    do, ho, wo = d - kd + 1, h - kh + 1, w - kw + 1
    s = h * w                      # one depth slice, flat; a multiple of 128 here
    cp = _round_up(ci, 16)
    td = min(4, do)                # depth slices per band
    n_bands = pl.cdiv(do, td)
    dp = n_bands * td + HALO
    band = td * s
    chunk = min(1024, band)
    bco = min(64, co)
    offsets = tuple(a * s + b * w + c for a in range(kd) for b in range(kh) for c in range(kw))
    win_len = band + HALO * s + 128

    xf = jnp.pad(x, ((0, 0), (0, cp - ci), (0, dp - d), (0, 0), (0, 0))).reshape(n, cp, dp * s)
    wt = jnp.pad(weight, ((0, 0), (0, cp - ci), (0, 0), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 4, 0, 1).reshape(kd * kh * kw, co, cp)
    b = bias.reshape(co, 1).astype(jnp.float32)

    def halo_spec(k):
        return pl.BlockSpec((1, cp, s), lambda i, c, j: (i, 0, (j + 1) * td + k))

    out = pl.pallas_call(
        functools.partial(_conv_mish_tanh_kernel, offsets=offsets, chunk=chunk, band=band,
                          slice_len=s),
        out_shape=jax.ShapeDtypeStruct((n, co, n_bands * band), x.dtype),
        grid=(n, co // bco, n_bands),
        in_specs=[
            pl.BlockSpec((1, cp, band), lambda i, c, j: (i, 0, j)),
            halo_spec(0), halo_spec(1), halo_spec(2),
            pl.BlockSpec((kd * kh * kw, bco, cp), lambda i, c, j: (0, c, 0)),
            pl.BlockSpec((bco, 1), lambda i, c, j: (c, 0)),
        ],
        out_specs=pl.BlockSpec((1, bco, band), lambda i, c, j: (i, c, j)),
        scratch_shapes=[pltpu.VMEM((cp, win_len), x.dtype)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel")),
    )(xf, xf, xf, xf, wt, b)
    out = out.reshape(n, co, n_bands * td, h, w)
    return out[:, :, :do, :ho, :wo]
