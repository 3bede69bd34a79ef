"""Honest (8p_gemm): a TPU matmul kernel with ``dimension_semantics``, applied with ``jax.vmap``
over two halves of the rows (as JAX's own attention kernels and the 2p/4p experts do over a
batch). vmap adds a grid axis without extending ``dimension_semantics``; the TPU interpreter's
race check used to fail on that (a JAX limitation), making an honest kernel `runtime_error`.
The added axis is an independent batch axis, checked as parallel: `correct`."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _one(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _matmul, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // 128, n // 256),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, 256), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 256), lambda i, j: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
    )(a, b)


def kernel(a, b):
    m = a.shape[0]
    halves = a.reshape(2, m // 2, a.shape[1])
    out = jax.vmap(_one, in_axes=(0, None))(halves, b)
    return out.reshape(m, b.shape[1])
