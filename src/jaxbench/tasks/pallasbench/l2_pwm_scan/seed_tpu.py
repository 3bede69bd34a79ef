"""Original TPU-style seed for l2_pwm_scan: one whole-array block, lane rotations, grid of 1.

S is viewed channels-first as S^T (C, L) = (4, 1024) (a transpose outside, no flops), so
positions lie along the 128-wide lanes. For each window offset k (static loop, W = 12) the
kernel rotates S^T left by k lanes (``pltpu.roll`` with shift L - k, i.e. jnp.roll by -k:
column p then holds S[p + k]) and accumulates it times the (C, 1) column P[:, k] into a
(C, L) float32 sum; a final sum over the C sublanes gives the (1, L) scores. Positions
p <= L - W never read a wrapped-around column (p + k <= L - 1); the W - 1 tail positions
are garbage and the (1, L) output is sliced to (L - W + 1,) outside. Unaligned lane slices
(offset k, length 1013) are avoided altogether. VMEM: S^T (4 -> 8 sublanes) x 1024 x 4 B =
32 KiB, P 4 KiB, output 32 KiB (padded), double-buffered: ~140 KiB.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _pwm_kernel(st_ref, p_ref, o_ref, *, window):
    x = st_ref[...].astype(jnp.float32)
    p = p_ref[...].astype(jnp.float32)
    length = x.shape[1]
    acc = x * p[:, 0:1]
    for k in range(1, window):
        acc = acc + pltpu.roll(x, length - k, 1) * p[:, k:k + 1]
    o_ref[...] = jnp.sum(acc, axis=0, keepdims=True).astype(o_ref.dtype)


def kernel(s, p):
    length, c = s.shape
    w = p.shape[1]
    out = pl.pallas_call(
        functools.partial(_pwm_kernel, window=w),
        out_shape=jax.ShapeDtypeStruct((1, length), s.dtype),
        grid=(1,),
        in_specs=[pl.BlockSpec((c, length), lambda i: (0, 0)),
                  pl.BlockSpec((c, w), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((1, length), lambda i: (0, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",)),
    )(s.T, p)
    return out[0, :length - w + 1]
