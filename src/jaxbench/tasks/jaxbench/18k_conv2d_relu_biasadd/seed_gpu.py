"""Seed kernel for 18k_conv2d_relu_biasadd on NVIDIA GPUs (Pallas Triton): direct convolution.

Each image is flattened to (C, H·W). Output pixel p = h·W + w of tap (kh, kw) reads input
pixel p + kh·W + kw, so each program computes a (bco, chunk) tile of flat output pixels as
a sum over the taps of (bco, CI) x (CI, chunk) matmuls on shifted slices of the flat image,
in a float32 register accumulator, then applies bias, ReLU and the second bias. The wrap-
around columns (w >= Wo) are computed and dropped outside.
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


def _conv_relu_bias_kernel(x_ref, w_ref, cb_ref, b_ref, o_ref, *, offsets, chunk):
    base = pl.program_id(2) * chunk
    acc = jnp.zeros(o_ref.shape[1:], jnp.float32)            # (bco, chunk)
    for t, off in enumerate(offsets):
        xs = x_ref[0, :, pl.ds(base + off, chunk)]            # (cp, chunk)
        acc += jnp.dot(w_ref[t], xs, preferred_element_type=jnp.float32)
    y = jnp.maximum(acc + cb_ref[...][:, None], 0.0) + b_ref[...][:, None]
    o_ref[0] = y.astype(o_ref.dtype)


def kernel(x, weight, conv_bias, bias):
    n, ci, h, w = x.shape
    co, _, kh, kw = weight.shape
    ho, wo = h - kh + 1, w - kw + 1
    cp = max(16, _next_pow2(ci))
    bco = min(64, _next_pow2(co))
    cop = _round_up(co, bco)
    flat_out = ho * w
    chunk = min(128, _next_pow2(flat_out))
    n_chunks = pl.cdiv(flat_out, chunk)
    lin = n_chunks * chunk + (kh - 1) * w + kw - 1

    xf = jnp.pad(x.reshape(n, ci, h * w), ((0, 0), (0, cp - ci), (0, lin - h * w)))
    wt = jnp.pad(weight, ((0, cop - co), (0, cp - ci), (0, 0), (0, 0)))
    wt = wt.transpose(2, 3, 0, 1).reshape(kh * kw, cop, cp)
    offsets = tuple(i * w + j for i in range(kh) for j in range(kw))
    cb = jnp.pad(conv_bias.astype(jnp.float32), (0, cop - co))
    b = jnp.pad(bias.reshape(co).astype(jnp.float32), (0, cop - co))

    out = pl.pallas_call(
        functools.partial(_conv_relu_bias_kernel, offsets=offsets, chunk=chunk),
        out_shape=jax.ShapeDtypeStruct((n, cop, n_chunks * chunk), x.dtype),
        grid=(n, cop // bco, n_chunks),
        in_specs=[
            pl.BlockSpec((1, cp, lin), lambda i, c, j: (i, 0, 0)),
            pl.BlockSpec((kh * kw, bco, cp), lambda i, c, j: (0, c, 0)),
            pl.BlockSpec((bco,), lambda i, c, j: (c,)),
            pl.BlockSpec((bco,), lambda i, c, j: (c,)),
        ],
        out_specs=pl.BlockSpec((1, bco, chunk), lambda i, c, j: (i, c, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(xf, wt, cb, b)
    return out[:, :co, :flat_out].reshape(n, co, ho, w)[:, :, :, :wo]
