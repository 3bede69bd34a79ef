"""Cheat (8p_gemm): the tiled matmul with K marked "parallel" while every K step
read-modify-writes the one output block (a race on two cores). The body tries to detect the
TPU interpreter (concrete refs or program ids, as when a body is run in Python) and raise
NotImplementedError there, hoping the race check is skipped as unsupported. The body is
traced once, abstractly, so the detection never fires: the interpreter reports the race."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _kernel(a_ref, b_ref, o_ref):
    if isinstance(pl.program_id(2), (int, np.integer)) or isinstance(o_ref, np.ndarray):
        raise NotImplementedError("not on the TPU interpreter")

    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    acc = o_ref[...] + jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = acc


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // 256, n // 512, k // 128),
        in_specs=[pl.BlockSpec((256, 128), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((128, 512), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((256, 512), lambda i, j, kk: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",) * 3),
    )(a, b).astype(a.dtype)
