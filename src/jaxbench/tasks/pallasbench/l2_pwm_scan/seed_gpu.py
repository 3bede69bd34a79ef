"""GPU seed for l2_pwm_scan (Pallas Triton backend): 128 positions per program, masked loads.

The output length L - W + 1 (1013 at full size) is not a power of two, so the kernel writes
a padded (cdiv(n, 128) * 128,) output (1024 at full size) that is sliced to n outside. One
program per 128 output positions: for each window offset k (static loop, W = 12) it loads
the (128, C) = (128, 4) slab S[base + k : base + k + 128, :] with a mask on rows < L (the
last program's slabs run past the end of S; masked rows read 0) and accumulates it times
row k of P^T (a (C,) vector) into a (128, 4) float32 sum; a final sum over the 4 channels
gives the (128,) scores. P is passed transposed and zero-padded to (16, C) so its block is
a power of two; S is zero-padded to a power-of-two row count when it is not one already
(1024 and 512 are: no copy). Every tensor is power-of-two sized: (128, 4) slabs and
masks, (4,) PWM rows, (128,) scores; the output block divides the padded output exactly.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _pwm_kernel(s_ref, pt_ref, o_ref, *, window, length):
    bp = o_ref.shape[0]
    c = s_ref.shape[1]
    base = pl.program_id(0) * bp
    rows = base + jax.lax.broadcasted_iota(jnp.int32, (bp, c), 0)
    acc = jnp.zeros((bp, c), jnp.float32)
    for k in range(window):
        x = plgpu.load(s_ref.at[pl.ds(base + k, bp), :], mask=rows + k < length, other=0.0)
        acc = acc + x.astype(jnp.float32) * pt_ref[k, :].astype(jnp.float32)[None, :]
    o_ref[...] = jnp.sum(acc, axis=1).astype(o_ref.dtype)


def _next_pow2(x):
    return 1 << (x - 1).bit_length()


def kernel(s, p):
    length, c = s.shape
    w = p.shape[1]
    n = length - w + 1
    bp = min(128, _next_pow2(n))
    nb = pl.cdiv(n, bp)
    lp = _next_pow2(length)
    s_pad = s if lp == length else jnp.pad(s, ((0, lp - length), (0, 0)))
    pt = jnp.pad(p.T, ((0, _next_pow2(w) - w), (0, 0)))
    out = pl.pallas_call(
        functools.partial(_pwm_kernel, window=w, length=length),
        out_shape=jax.ShapeDtypeStruct((nb * bp,), s.dtype),
        grid=(nb,),
        in_specs=[pl.BlockSpec((lp, c), lambda i: (0, 0)),
                  pl.BlockSpec(pt.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bp,), lambda i: (i,)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(s_pad, pt)
    return out[:n]
