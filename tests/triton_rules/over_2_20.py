"""Breaks Triton's 2^20-element rule on l1_relu at full size only: each program loads a block
of up to 1024 whole rows. Small (256, 512): one (256, 512) block, 2^17 elements, fine; full
(4096, 4096): (1024, 4096) blocks, 2^22 elements in one tensor."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _body(x_ref, o_ref):
    o_ref[...] = jnp.maximum(x_ref[...], 0)


def kernel(x):
    m, n = x.shape
    bm = min(1024, m)
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // bm,),
        in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4))(x)
