"""Seed kernel for 28k_convtranspose3d_layernorm_gelu_scaling on NVIDIA GPUs (Pallas Triton).

Transposed convolution, stride 2, padding 1, kernel 4, by sub-pixel decomposition: along
each axis, output 2m + r gets input m (tap 1) and m - 1 (tap 3) for r = 0, and input m + 1
(tap 0) and m (tap 2) for r = 1. So each of the 8 output parities is an ordinary stride-1
convolution with 2x2x2 taps of the input padded by one voxel per side.

Kernel 1: each padded image is flattened to (CI, (D+2)(H+2)(W+2)); output voxel p of a
parity class with tap offset o reads input voxel p + o, so a program computes a (bco, chunk)
tile for all 8 parities, each a sum of 8 (bco, CI) x (CI, chunk) matmuls on shifted slices,
in float32 registers. Outside, the parities are interleaved into the (N, CO, 2D, 2H, 2W)
layout (a transpose: data movement only). Kernel 2, over (1, rows, 2W) blocks of the
(N·CO, 2D·2H, 2W) view (each block belongs to one channel): LayerNorm over the last axis,
affine, the channel's conv bias (added after the norm), exact GELU (erf polynomial,
Abramowitz-Stegun 7.1.26, |error| < 1.5e-7, as Triton has no erf), x1.0.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"
EPS = 1e-5
# Per axis and output parity: (kernel tap, input offset into the 1-padded input).
TAPS = (((1, 1), (3, 0)), ((0, 2), (2, 1)))


def _next_pow2(a):
    return 1 << max(0, (a - 1).bit_length())


def _erf(z):
    a = jnp.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                                                       + t * (-1.453152027 + t * 1.061405429))))
    e = 1.0 - poly * jnp.exp(-a * a)
    return jnp.where(z < 0, -e, e)


def _convt_kernel(x_ref, w_ref, o_ref, *, parity_offsets, chunk):
    base = pl.program_id(2) * chunk
    bco = o_ref.shape[2]
    for p, offsets in enumerate(parity_offsets):
        acc = jnp.zeros((bco, chunk), jnp.float32)
        for t, off in enumerate(offsets):
            xs = x_ref[0, :, pl.ds(base + off, chunk)]
            acc += jnp.dot(w_ref[p, t], xs, preferred_element_type=jnp.float32)
        o_ref[0, p] = acc


def _ln_gelu_kernel(y_ref, g_ref, b_ref, cb_ref, o_ref):
    y = y_ref[0]                                                  # (br, 2W), one channel
    mean = jnp.mean(y, axis=1)
    dev = y - mean[:, None]
    var = jnp.mean(dev * dev, axis=1)
    z = dev * jax.lax.rsqrt(var + EPS)[:, None] * g_ref[...][None, :] + b_ref[...][None, :]
    z = z + cb_ref[...][None, :]                                  # (1,) -> per-channel scalar
    out = 0.5 * z * (1.0 + _erf(z * (1.0 / math.sqrt(2.0))))
    o_ref[0] = (out * 1.0).astype(o_ref.dtype)


def kernel(x, weight, conv_bias, ln_weight, ln_bias):
    n, ci, d, h, w = x.shape
    _, co, k, _, _ = weight.shape
    wp = w + 2
    s = (h + 2) * wp
    cp = max(16, _next_pow2(ci))
    bco = min(32, _next_pow2(co))
    flat_out = d * s
    chunk = min(128, _next_pow2(flat_out))
    n_chunks = pl.cdiv(flat_out, chunk)
    lo = n_chunks * chunk
    lin = lo + 2 * s + 2 * wp + 2

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
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(xf, wt)

    # Interleave the parities: (n, rd, rh, rw, co, d, h, w) -> (n, co, d, rd, h, rh, w, rw).
    y = y8[:, :, :, :flat_out].reshape(n, 2, 2, 2, co, d, h + 2, wp)[..., :h, :w]
    rows = 2 * d * 2 * h                                                 # rows per (image, channel)
    y = y.transpose(0, 4, 5, 1, 6, 2, 7, 3).reshape(n * co, rows, 2 * w)

    br = math.gcd(rows, 64)
    out = pl.pallas_call(
        _ln_gelu_kernel,
        out_shape=jax.ShapeDtypeStruct((n * co, rows, 2 * w), x.dtype),
        grid=(n * co, rows // br),
        in_specs=[pl.BlockSpec((1, br, 2 * w), lambda g, r: (g, r, 0)),
                  pl.BlockSpec((2 * w,), lambda g, r: (0,)),
                  pl.BlockSpec((2 * w,), lambda g, r: (0,)),
                  pl.BlockSpec((1,), lambda g, r: (g % co,))],
        out_specs=pl.BlockSpec((1, br, 2 * w), lambda g, r: (g, r, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(y, ln_weight.astype(jnp.float32), ln_bias.astype(jnp.float32), conv_bias.astype(jnp.float32))
    return out.reshape(n, co, 2 * d, 2 * h, 2 * w)
