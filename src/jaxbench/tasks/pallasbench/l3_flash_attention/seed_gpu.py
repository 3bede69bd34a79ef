"""GPU seed for l3_flash_attention (Pallas Triton backend): real flash attention.

One program per block of bq = 64 query rows (grid S/64 = 8 at full size). The K and V
refs span the whole sequence (512 x 64 = 32,768 elements each); the kernel loops over
them in bk = 64-row slices, keeping a running row max m, running sum l and a rescaled
float32 accumulator (64 x 64) in registers (online softmax), and divides by l at the end.

Every tensor is a power of two in elements: Q/O blocks and the accumulator 64 x 64 = 4,096,
K/V slices 64 x 64, the score tile 64 x 64, m and l 64; all far under 2^20. S is a
multiple of 64 at both sizes, so no edge masking is needed.
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _flash_kernel(q_ref, k_ref, v_ref, o_ref, *, scale, bk, num_kv):
    q = q_ref[...]
    bq, d = q.shape

    def body(j, carry):
        m_prev, l_prev, acc = carry
        k = k_ref[pl.ds(j * bk, bk), :]
        v = v_ref[pl.ds(j * bk, bk), :]
        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32) * scale
        m_new = jnp.maximum(m_prev, jnp.max(s, axis=1))
        alpha = jnp.exp(m_prev - m_new)
        p = jnp.exp(s - m_new[:, None])
        l_new = alpha * l_prev + jnp.sum(p, axis=1)
        acc = alpha[:, None] * acc + jnp.dot(p, v, preferred_element_type=jnp.float32)
        return m_new, l_new, acc

    init = (jnp.full((bq,), -jnp.inf, jnp.float32), jnp.zeros((bq,), jnp.float32),
            jnp.zeros((bq, d), jnp.float32))
    _, l_fin, acc = jax.lax.fori_loop(0, num_kv, body, init)
    o_ref[...] = (acc / l_fin[:, None]).astype(o_ref.dtype)


def kernel(q, k, v):
    s, d = q.shape
    bq, bk = min(64, s), min(64, s)
    return pl.pallas_call(
        functools.partial(_flash_kernel, scale=1.0 / math.sqrt(d), bk=bk, num_kv=s // bk),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(s // bq,),
        in_specs=[pl.BlockSpec((bq, d), lambda i: (i, 0)),
                  pl.BlockSpec((s, d), lambda i: (0, 0)),
                  pl.BlockSpec((s, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bq, d), lambda i: (i, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=2),
    )(q, k, v)
