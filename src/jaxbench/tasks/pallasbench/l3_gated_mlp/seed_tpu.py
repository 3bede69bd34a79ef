"""Original TPU-style seed for l3_gated_mlp: grid (M/256, F/512), F is the reduction axis.

Each step takes a (256, 512) row block of X (whole D), (512, 512) column chunks of W_g and
W_u and the matching (512, 512) row chunk of W_d; it forms the gated hidden chunk
silu(X W_g) ⊙ X W_u (256 x 512) and adds its product with the W_d chunk to a float32
VMEM accumulator, written out on the last F step. VMEM at full size: X 0.5 MiB, three
weight chunks 1 MiB each, output 0.5 MiB, all double-buffered = 9 MiB, plus the 0.5 MiB
accumulator: well under the 32 MiB scoped default. Grid (1, 2) at full size.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _mlp_kernel(x_ref, wg_ref, wu_ref, wd_ref, o_ref, acc_ref):
    f = pl.program_id(1)

    @pl.when(f == 0)
    def _init():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    x = x_ref[...]
    g = jnp.dot(x, wg_ref[...], preferred_element_type=jnp.float32)
    u = jnp.dot(x, wu_ref[...], preferred_element_type=jnp.float32)
    h = g * jax.nn.sigmoid(g) * u
    acc_ref[...] += jnp.dot(h, wd_ref[...], preferred_element_type=jnp.float32)

    @pl.when(f == pl.num_programs(1) - 1)
    def _store():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def kernel(x, w_g, w_u, w_d):
    m, d = x.shape
    f = w_g.shape[1]
    bm, bf = min(256, m), min(512, f)
    return pl.pallas_call(
        _mlp_kernel,
        out_shape=jax.ShapeDtypeStruct((m, d), x.dtype),
        grid=(m // bm, f // bf),
        in_specs=[pl.BlockSpec((bm, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((d, bf), lambda i, j: (0, j)),
                  pl.BlockSpec((d, bf), lambda i, j: (0, j)),
                  pl.BlockSpec((bf, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((bm, d), lambda i, j: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bm, d), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
    )(x, w_g, w_u, w_d)
