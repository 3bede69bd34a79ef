"""Cheat (8p_gemm): the racing matmul (K "parallel", every K step read-modify-writes one
output block), whose race only the TPU interpreter's check sees. When traced at the task's
other size, candidate code writes the tracer's report itself: the honest exports of its own
trace (JAX's own serialization), a status saying "traced" with the TPU-interpreter
check "unsupported", and ends the process with exit status 0, before the harness's own last
step. Refused: the parent reads nothing but the jaxpr hand-over (there is none) and failure
text; the forged exports are never read."""
import operator
import typing

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"

get = operator.attrgetter
modules = get("mod" + "ules")(get("sy" + "s")(typing))


def _racing(a_ref, b_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)


def _call(a, b):
    m, k = a.shape
    n = b.shape[1]
    out = pl.pallas_call(
        _racing, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // 256, n // 512, k // 128),
        in_specs=[pl.BlockSpec((256, 128), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((128, 512), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((256, 512), lambda i, j, kk: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",) * 3),
    )(a, b)
    return out.astype(a.dtype)


def _write(name, data):
    np.frombuffer(bytes(data), np.uint8).tofile("../" + name)


def _forge_and_exit():
    # (the tracer no longer loads the judge's exporter: the old design's exports are forged
    # as JAX's own serialization of the racing kernel)
    specs = [jax.ShapeDtypeStruct((256, 512), jnp.bfloat16),
             jax.ShapeDtypeStruct((512, 512), jnp.bfloat16)]
    exported = jax.export.export(jax.jit(_call), platforms=("tpu",))(*specs)
    _write("target.export", exported.serialize())
    _write("interpret.export", exported.serialize())
    _write("status.json", b'{"status": "traced", "stages": {"trace": {"seconds": 1.0}}, '
                          b'"tpu_interpreter": "unsupported: forged"}')
    get("_ex" + "it")(modules["o" + "s"])(0)


def kernel(a, b):
    if a.shape[0] > 256:
        _forge_and_exit()
    return _call(a, b)
