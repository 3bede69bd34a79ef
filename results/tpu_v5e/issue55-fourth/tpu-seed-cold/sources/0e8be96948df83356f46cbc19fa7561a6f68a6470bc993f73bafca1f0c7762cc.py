"""Seed kernel for 25k_conv3d_groupnorm_mean on TPU: conv3d + GroupNorm + mean, one kernel.

Each image is flattened to (C, D·H·W) (channels on sublanes, voxels on lanes; the 3 input
channels padded to 16 with zeros). Output voxel p = d·HW + h·W + w of tap (kd, kh, kw) reads
input voxel p + kd·HW + kh·W + kw, so each of the 27 taps is a (CO, CI) x (CI, chunk) matmul
on a lane-shifted slice (aligned load plus lane rotation) of the image.

Grid (N,): a step owns a whole sample, so its group statistics are complete. Pass 1
convolves chunk by chunk into a float32 VMEM copy of c = conv + bias and sums each channel's
valid voxels (wrap-around positions h >= Ho, w >= Wo masked); group sums come from a
(CO, CO) same-group matrix. Pass 2 sums squared deviations from the group mean. Since every
channel has the same voxel count, mean(GN(c)) = mean_ch(gamma·(mean_ch - mean_grp)·rstd_grp
+ beta), which the step reduces to one number.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
GROUPS = 8
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


def _kernel(x_ref, w_ref, cb_ref, ga_ref, be_ref, g_ref, m_ref, o_ref, c_ref, *,
            offsets, chunk, n_chunks, count, cpg):
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
    ch_mean = s1 / count
    grp_mean = _group_total(g_ref, s1) / (count * cpg)

    def var_pass(j, s2):
        base = pl.multiple_of(j * chunk, 128)
        dev = (c_ref[:, pl.ds(base, chunk)] - grp_mean) * m_ref[:, pl.ds(base, chunk)]
        return s2 + jnp.sum(dev * dev, axis=1, keepdims=True)

    s2 = jax.lax.fori_loop(0, n_chunks, var_pass, zeros)
    rstd = jax.lax.rsqrt(_group_total(g_ref, s2) / (count * cpg) + EPS)
    per_ch = ga_ref[...] * (ch_mean - grp_mean) * rstd + be_ref[...]      # (co, 1)
    total = jnp.sum(jnp.broadcast_to(per_ch, (co, 128)), axis=0, keepdims=True) / co
    o_ref[0] = total


def kernel(x, weight, conv_bias, gamma, beta):
    n, ci, d, h, w = x.shape
    co, _, kd, kh, kw = weight.shape
    do, ho, wo = d - kd + 1, h - kh + 1, w - kw + 1
    s = h * w
    cp = _round_up(ci, 16)
    flat_out = do * s
    chunk = min(1024, _round_up(flat_out, 128))
    n_chunks = pl.cdiv(flat_out, chunk)
    lo = n_chunks * chunk
    offsets = tuple(a * s + b * w + c for a in range(kd) for b in range(kh) for c in range(kw))
    lin = lo + _round_up(offsets[-1], 128) + 128
    cpg = co // GROUPS

    xf = jnp.pad(x.reshape(n, ci, d * s), ((0, 0), (0, cp - ci), (0, lin - d * s)))
    wt = jnp.pad(weight, ((0, 0), (0, cp - ci), (0, 0), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 4, 0, 1).reshape(kd * kh * kw, co, cp)
    col = lambda v: v.reshape(co, 1).astype(jnp.float32)  # noqa: E731
    grp = jnp.arange(co) // cpg
    same_group = (grp[:, None] == grp[None, :]).astype(jnp.float32)
    pos = jnp.arange(lo)
    valid = (pos < flat_out) & ((pos % s) // w < ho) & (pos % w < wo)
    mask = valid.astype(jnp.float32).reshape(1, lo)
    chan = pl.BlockSpec((co, 1), lambda i: (0, 0))

    out = pl.pallas_call(
        functools.partial(_kernel, offsets=offsets, chunk=chunk, n_chunks=n_chunks,
                          count=float(do * ho * wo), cpg=cpg),
        out_shape=jax.ShapeDtypeStruct((n, 1, 128), jnp.float32),
        grid=(n,),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i: (i, 0, 0)),
            pl.BlockSpec((kd * kh * kw, co, cp), lambda i: (0, 0, 0)),
            chan, chan, chan,
            pl.BlockSpec((co, co), lambda i: (0, 0)),
            pl.BlockSpec((1, lo), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((1, 1, 128), lambda i: (i, 0, 0)),
        scratch_shapes=[pltpu.VMEM((co, lo), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(xf, wt, col(conv_bias), col(gamma), col(beta), same_group, mask)
    return out[:, 0, 0].astype(x.dtype)
