"""Legit (12p_rmsnorm) as model code is written with einops: the tokens flattened and the scale
broadcast by ``einops.rearrange`` (pure reshapes: free glue), the rows normalised by a Pallas
kernel. einops is on the import allow-list and installed with the project."""
import einops
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"


def _kernel(x_ref, s_ref, o_ref):
    x = x_ref[...].astype(jnp.float32)
    y = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)
    o_ref[...] = (y.astype(o_ref.dtype) * s_ref[...]).astype(o_ref.dtype)


def kernel(x, scale):
    b, s, h = x.shape
    rows = einops.rearrange(x, "b s h -> (b s) h")
    out = pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct(rows.shape, x.dtype), grid=(b * s // 128,),
        in_specs=[pl.BlockSpec((128, h), lambda i: (i, 0)), pl.BlockSpec((1, h), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, h), lambda i: (i, 0)),
    )(rows, einops.rearrange(scale, "h -> 1 h"))
    return einops.rearrange(out, "(b s) h -> b s h", b=b, s=s)
