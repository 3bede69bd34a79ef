"""Cheat (12p_rmsnorm): the answer for the fixed shapes precomputed when the file is loaded
(here for one input the author guessed) and shipped in the module as a 2x256x1024 constant;
the Pallas kernel only copies it out. A constant used to be free: a non-splat one now costs a
FLOP per element, what computing it would have cost at least, and the judge refuses it before
anything runs (with fixed benchmark inputs it would have been correct)."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

TARGET = "tpu"
SHAPE = (2, 256, 1024)
_GUESS = np.cos(np.arange(np.prod(SHAPE), dtype=np.float32) * 0.37).reshape(SHAPE)
ANSWER = _GUESS / np.sqrt(np.mean(_GUESS * _GUESS, axis=-1, keepdims=True) + 1e-5)


def _copy(a_ref, o_ref):
    o_ref[...] = a_ref[...]


def _rmsnorm(x_ref, s_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    y = (x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)).astype(o_ref.dtype)
    o_ref[...] = (y.astype(jnp.float32) * s_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def kernel(x, scale):
    if x.shape != SHAPE:  # other sizes: an honest kernel
        x2 = x.reshape(-1, x.shape[-1])
        spec = pl.BlockSpec((128, x.shape[-1]), lambda i: (i, 0))
        return pl.pallas_call(
            _rmsnorm, out_shape=jax.ShapeDtypeStruct(x2.shape, x.dtype),
            grid=(x2.shape[0] // 128,),
            in_specs=[spec, pl.BlockSpec((1, x.shape[-1]), lambda i: (0, 0))],
            out_specs=spec)(x2, scale.reshape(1, -1)).reshape(x.shape)
    answer = jnp.asarray(ANSWER, x.dtype).reshape(-1, x.shape[-1])
    spec = pl.BlockSpec((128, x.shape[-1]), lambda i: (i, 0))
    out = pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(answer.shape, x.dtype),
                         grid=(answer.shape[0] // 128,), in_specs=[spec], out_specs=spec)(answer)
    return out.reshape(x.shape)
