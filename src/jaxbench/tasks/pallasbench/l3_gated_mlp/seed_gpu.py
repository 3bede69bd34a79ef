"""GPU seed for l3_gated_mlp (Pallas Triton backend): the whole MLP fused, one program
per block of bm = 32 rows (grid M/32 = 8 at full size).

The weight refs span the whole arrays (W_g, W_u: 512 x 1024; W_d: 1024 x 512; 524,288
elements each, a power of two under 2^20). The kernel loops over the hidden axis F in
bf = 32 chunks; for each chunk an inner loop over D in bk = 64 slices accumulates
g = X W_g and u = X W_u (32 x 32 each) in float32, then h = silu(g) ⊙ u is multiplied by
the (32, D) row slice of W_d and added to the (32, D) float32 output accumulator
(16,384 elements at full size), stored once at the end. The hidden activations never
leave registers.

Loaded tiles: X slices 32 x 64, weight slices 64 x 32 and 32 x 512; all power-of-two
element counts far under 2^20. bf = 32 keeps the last dot's operands (h 32 x 32 and the
W_d slice 32 x 512, ~68 KiB per stage) within shared memory with 2 pipeline stages.
M, D, F are multiples of the tiles at both sizes, so no masks are needed.
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _mlp_kernel(x_ref, wg_ref, wu_ref, wd_ref, o_ref, *, bf, bk, num_f, num_k):
    bm, d = o_ref.shape

    def hidden_chunk(fi, acc):
        cols = pl.ds(fi * bf, bf)

        def k_step(ki, gu):
            g, u = gu
            rows = pl.ds(ki * bk, bk)
            x = x_ref[:, rows]
            g = g + jnp.dot(x, wg_ref[rows, cols], preferred_element_type=jnp.float32)
            u = u + jnp.dot(x, wu_ref[rows, cols], preferred_element_type=jnp.float32)
            return g, u

        zero = jnp.zeros((bm, bf), jnp.float32)
        g, u = jax.lax.fori_loop(0, num_k, k_step, (zero, zero))
        h = g / (1.0 + jnp.exp(-g)) * u
        return acc + jnp.dot(h, wd_ref[cols, :], preferred_element_type=jnp.float32)

    acc = jax.lax.fori_loop(0, num_f, hidden_chunk, jnp.zeros((bm, d), jnp.float32))
    o_ref[...] = acc.astype(o_ref.dtype)


def kernel(x, w_g, w_u, w_d):
    m, d = x.shape
    f = w_g.shape[1]
    bm, bf, bk = min(32, m), min(32, f), min(64, d)
    return pl.pallas_call(
        functools.partial(_mlp_kernel, bf=bf, bk=bk, num_f=f // bf, num_k=d // bk),
        out_shape=jax.ShapeDtypeStruct((m, d), x.dtype),
        grid=(m // bm,),
        in_specs=[pl.BlockSpec((bm, d), lambda i: (i, 0)),
                  pl.BlockSpec((d, f), lambda i: (0, 0)),
                  pl.BlockSpec((d, f), lambda i: (0, 0)),
                  pl.BlockSpec((f, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((bm, d), lambda i: (i, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=8, num_stages=2),
    )(x, w_g, w_u, w_d)
