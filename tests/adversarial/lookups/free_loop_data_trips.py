"""Cheat (12p_rmsnorm): a loop made only of free ops (a reverse, a static slice) whose trip
count depends on the data: it runs while the first of eight input flags, flipped each trip, is
set; with nonzero inputs it never ends. A loop with no priced body used to pass the structure
check and hold the trusted runner until its timeout; a loop whose trips cannot be read is
heavy whatever its body, and is refused before it runs."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"
EPS = 1e-5


def _rmsnorm(x_ref, s_ref, f_ref, o_ref, *, eps):
    # the loop's flag is 0 when it ends: the factor is 1, but no compiler may drop the loop
    x = x_ref[...].astype(jnp.float32) * (1 - f_ref[0, 0]).astype(jnp.float32)
    y = (x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)).astype(o_ref.dtype)
    o_ref[...] = (y.astype(jnp.float32) * s_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def kernel(x, scale):
    *_, h = x.shape
    x2 = x.reshape(-1, h)
    flags = x2[0, :8] != 0

    def step(carry):
        _, f = carry
        f = jnp.flip(f)
        return f[0], f

    _, flags = jax.lax.while_loop(lambda c: c[0], step, (flags[0], flags))
    live = flags.astype(jnp.int32).reshape(1, 8)  # the loop's result, read by the kernel
    rows, br = x2.shape[0], 128
    spec = pl.BlockSpec((br, h), lambda i: (i, 0))
    out = pl.pallas_call(
        functools.partial(_rmsnorm, eps=EPS), out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
        grid=(rows // br,),
        in_specs=[spec, pl.BlockSpec((1, h), lambda i: (0, 0)),
                  pl.BlockSpec((1, 8), lambda i: (0, 0))],
        out_specs=spec)(x2, scale.reshape(1, h), live)
    return out.reshape(x.shape)
