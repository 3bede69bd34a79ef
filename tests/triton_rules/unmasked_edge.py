"""Breaks Triton's edge rule on l1_relu: all columns but the last 128 go to a call with
(64, 256) blocks, which do not divide them (384 columns at the small size, 3968 at full
size), and the kernel reads and writes the ragged last block with plain x_ref[...] accesses:
out of bounds on the chip (the interpreter pads and hides it)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _body(x_ref, o_ref):
    o_ref[...] = jnp.maximum(x_ref[...], 0)


def _call(x, bm, bn):
    m, n = x.shape
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(m, bm), pl.cdiv(n, bn)),
        in_specs=[pl.BlockSpec((bm, bn), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4))(x)


def kernel(x):
    n = x.shape[1]
    head = _call(x[:, :n - 128], 64, 256)
    tail = _call(x[:, n - 128:], 64, 128)
    return jnp.concatenate([head, tail], axis=1)
