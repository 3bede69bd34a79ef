"""GPU seed for l2_geglu (Pallas Triton backend): (64, 128) output tiles, two accumulators.

Each program owns one (bm, bn) = (64, 128) output tile and loops over K inside the kernel
in bk = 32 slices: one (64, 32) slice of its X row block is multiplied by the (32, 128)
slices of its W_g and W_u column blocks into two float32 register accumulators; the
epilogue applies tanh-GELU to the gate, multiplies by the up projection and stores once. Every
tensor is power-of-two sized ((64, 32), (32, 128), (64, 128)); 64, 128 and 32 divide the
full and small sizes, so no edge masks are needed. Shared memory: (64*32 + 32*128) * 4 B =
24 KiB per dot x 3 pipeline stages = 72 KiB (~120 KiB for both dots), under Hopper's
227 KiB. Two 64 x 128 accumulators need 8 warps to stay in registers.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _gate(y):
    """tanh-GELU: 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))), in float32."""
    inner = _SQRT_2_OVER_PI * (y + 0.044715 * y * y * y)
    return 0.5 * y * (1.0 + jnp.tanh(inner))


def _glu_kernel(x_ref, wg_ref, wu_ref, o_ref, *, bk, num_k):
    def body(step, carry):
        acc_g, acc_u = carry
        x = x_ref[:, pl.ds(step * bk, bk)]
        wg = wg_ref[pl.ds(step * bk, bk), :]
        wu = wu_ref[pl.ds(step * bk, bk), :]
        acc_g = acc_g + jnp.dot(x, wg, preferred_element_type=jnp.float32)
        acc_u = acc_u + jnp.dot(x, wu, preferred_element_type=jnp.float32)
        return acc_g, acc_u

    zeros = jnp.zeros(o_ref.shape, jnp.float32)
    acc_g, acc_u = jax.lax.fori_loop(0, num_k, body, (zeros, zeros))
    o_ref[...] = (_gate(acc_g) * acc_u).astype(o_ref.dtype)


def kernel(x, w_g, w_u):
    m, k = x.shape
    n = w_g.shape[1]
    bm, bn, bk = min(64, m), min(128, n), min(32, k)
    w_spec = pl.BlockSpec((k, bn), lambda i, j: (0, j))
    return pl.pallas_call(
        functools.partial(_glu_kernel, bk=bk, num_k=k // bk),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)), w_spec, w_spec],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=8, num_stages=3),
    )(x, w_g, w_u)
