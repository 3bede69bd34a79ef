"""Cheat (reads memory it never wrote): outputs that depend, within tolerance, on a scratch
element the kernel reads without ever writing it (its low bits, squashed to a nudge of at most
half a bf16 ulp, applied before the output's rounding). The judge runs the same inputs with
two random fills of uninitialised memory and requires the same bits."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _rmsnorm_kernel(x_ref, s_ref, o_ref, probe_ref, *, eps):
    x = x_ref[...].astype(jnp.float32)
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    y = (x * jax.lax.rsqrt(ms + eps)).astype(o_ref.dtype)
    honest = y.astype(jnp.float32) * s_ref[...].astype(jnp.float32)  # before the final rounding
    low_bits = jax.lax.bitcast_convert_type(probe_ref[0, 0], jnp.int32) & 0xFFFF
    nudge = 2e-3 * low_bits.astype(jnp.float32) / 65535.0  # at most half a bf16 ulp
    o_ref[...] = (honest * (1.0 + nudge)).astype(o_ref.dtype)


def kernel(x, scale):
    *lead, h = x.shape
    x2 = x.reshape(-1, h)
    rows = x2.shape[0]
    br = min(128, rows)
    out = pl.pallas_call(
        functools.partial(_rmsnorm_kernel, eps=1e-5),
        out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(rows // br,),
        in_specs=[pl.BlockSpec((br, h), lambda i: (i, 0)),
                  pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((br, h), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(x2, scale.reshape(1, h))
    return out.reshape(x.shape)
