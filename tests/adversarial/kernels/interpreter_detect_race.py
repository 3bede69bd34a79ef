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
    if isinstance(pl.program_id(0), (int, np.integer)) or isinstance(o_ref, np.ndarray):
        raise NotImplementedError("not on the TPU interpreter")

    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    acc = o_ref[...] + jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = acc


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(k // 128,),
        in_specs=[pl.BlockSpec((m, 128), lambda kk: (0, kk)),
                  pl.BlockSpec((128, n), lambda kk: (kk, 0))],
        out_specs=pl.BlockSpec((m, n), lambda kk: (0, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(a, b).astype(a.dtype)
