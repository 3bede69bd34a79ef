"""Cheat (8p_gemm): the racing matmul of interpreter_detect_race.py, plus a user primitive
named "pallas_call" (an identity). The exporter rebinds every kernel-named equation with its
`interpret` parameter: candidate code then sees which run is which. Given the TPU
interpreter's InterpretParams, the primitive raises NotImplementedError, which the harness
treats as "interpreter unsupported" and skips the race check; the sequential runs are right."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.extend.core import Primitive
from jax.interpreters import mlir

TARGET = "tpu"


def _identity(x, interpret=False, **_):
    if isinstance(interpret, pltpu.InterpretParams):
        raise NotImplementedError("the TPU interpreter does not support this kernel")
    return x


probe = Primitive("pallas_call")
probe.def_impl(_identity)
probe.def_abstract_eval(lambda x, **_: x)  # raises only when lowered for that run
mlir.register_lowering(probe, mlir.lower_fun(_identity, multiple_results=False))


def _kernel(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    out = pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // 256, n // 512, k // 128),
        in_specs=[pl.BlockSpec((256, 128), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((128, 512), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((256, 512), lambda i, j, kk: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",) * 3),
    )(a, b)
    return probe.bind(out).astype(a.dtype)
