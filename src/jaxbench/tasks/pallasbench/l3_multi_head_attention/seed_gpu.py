"""GPU seed for l3_multi_head_attention (Pallas Triton backend).

Grid (H, S/bq) with bq = 64 query rows per program (8 x 4 = 32 programs at full size).
Each program loads its (64, 64) Q block and the head's whole K and V (256 x 64 = 16,384
elements each), forms the (64, 256) score tile (16,384 elements), runs a plain row
softmax in float32 and multiplies by V. With S = 256 the whole key axis fits one tile,
so no loop over K/V blocks is needed.

Every tensor is a power of two in elements and far under 2^20 (Q/O blocks 4,096, K/V
16,384, scores 16,384, row statistics 64). S is a multiple of 64 at both sizes: no masks.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _mha_kernel(q_ref, k_ref, v_ref, o_ref, *, scale):
    s = jax.lax.dot_general(q_ref[...], k_ref[...], (((1,), (1,)), ((), ())),
                            preferred_element_type=jnp.float32) * scale
    m = jnp.max(s, axis=1)
    p = jnp.exp(s - m[:, None])
    l = jnp.sum(p, axis=1)
    o = jnp.dot(p, v_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (o / l[:, None]).astype(o_ref.dtype)


def kernel(q, k, v):
    h, s, d = q.shape
    bq = min(64, s)
    return pl.pallas_call(
        functools.partial(_mha_kernel, scale=1.0 / math.sqrt(d)),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(h, s // bq),
        in_specs=[pl.BlockSpec((None, bq, d), lambda hi, qi: (hi, qi, 0)),
                  pl.BlockSpec((None, s, d), lambda hi, qi: (hi, 0, 0)),
                  pl.BlockSpec((None, s, d), lambda hi, qi: (hi, 0, 0))],
        out_specs=pl.BlockSpec((None, bq, d), lambda hi, qi: (hi, qi, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(q, k, v)
