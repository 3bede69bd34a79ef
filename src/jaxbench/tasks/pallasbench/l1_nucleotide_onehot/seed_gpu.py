"""GPU seed for l1_nucleotide_onehot (Pallas Triton backend): (256, 4) output tiles.

Program i loads 256 symbols (a (256,) block) and compares them with the 4 class ids: the
(256, 4) tile is 1,024 elements, and 4 = 2^2 classes is itself a power of two, so the
whole class axis fits one tile with no padding. 256 divides 4096 and 512 (full and small
L), so no edge masking is needed.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"

NUM_CLASSES = 4


def _onehot_kernel(seq_ref, o_ref):
    classes = jax.lax.broadcasted_iota(jnp.int32, o_ref.shape, 1)
    o_ref[...] = (seq_ref[...][:, None] == classes).astype(o_ref.dtype)


def kernel(seq):
    (n,) = seq.shape
    br = min(256, n)
    return pl.pallas_call(
        _onehot_kernel,
        out_shape=jax.ShapeDtypeStruct((n, NUM_CLASSES), jnp.float32),
        grid=(n // br,),
        in_specs=[pl.BlockSpec((br,), lambda i: (i,))],
        out_specs=pl.BlockSpec((br, NUM_CLASSES), lambda i: (i, 0)),
        compiler_params=plgpu.CompilerParams(num_warps=4, num_stages=1),
    )(seq)
