"""GPU seed for l2_layernorm_residual (Pallas Triton backend): 16 whole rows per program.

Each program loads a (16, H) = (16, 1024) block of x (16,384 elements) into registers,
reduces the per-row mean, then the variance of the centred values (two in-register
passes, numerically safer than E[x^2] - E[x]^2), normalises, adds the matching block of r
and stores once. Every tensor is power-of-two sized ((16, 1024) tiles, (16,) row
statistics); H = 1024 fits a whole row, so no column loop is needed, and 16 divides the
row count at both sizes, so no edge masks are needed.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _layernorm_residual_kernel(x_ref, r_ref, o_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    h = x.shape[1]
    xc = x - (jnp.sum(x, axis=1) / h)[:, None]
    inv = jax.lax.rsqrt(jnp.sum(xc * xc, axis=1) / h + eps)
    o_ref[...] = (xc * inv[:, None] + r_ref[...]).astype(o_ref.dtype)


def kernel(x, r):
    m, h = x.shape
    bm = min(16, m)
    return pl.pallas_call(
        functools.partial(_layernorm_residual_kernel, eps=1e-5),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // bm,),
        in_specs=[pl.BlockSpec((bm, h), lambda i: (i, 0)),
                  pl.BlockSpec((bm, h), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((bm, h), lambda i: (i, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(x, r)
