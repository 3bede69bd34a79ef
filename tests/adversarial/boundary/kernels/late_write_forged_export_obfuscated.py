"""Cheat (8p_gemm): a kernel that writes zeros, and candidate code that runs when the kernel is
traced at the task's other size (for the memory budgets): it exports a plain XLA matmul for the
CPU itself and writes it over the interpret-mode module in the tracer's directory, hoping the
file it leaves is the one the judge runs. The tracer now traces every size before it makes any
export and writes its own files last (unlinking what is there): the kernel is judged on its own
module and is wrong."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

TARGET = "tpu"


def _zeros(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)


def _forge(a, b):
    def honest(x, y):
        return jnp.dot(x, y, preferred_element_type=jnp.float32).astype(x.dtype)

    specs = [jax.ShapeDtypeStruct((256, 512), a.dtype), jax.ShapeDtypeStruct((512, 512), b.dtype)]
    data = jax.export.export(jax.jit(honest), platforms=["cpu"])(*specs).serialize()
    np.frombuffer(bytes(data), np.uint8).tofile("../interpret.export")


def kernel(a, b):
    if a.shape[0] > 256:  # the other size: only traced for the budgets
        _forge(a, b)
    m, n = a.shape[0], b.shape[1]
    return pl.pallas_call(_zeros, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
                          grid=(m // 256, n // 512),
                          in_specs=[pl.BlockSpec((256, 128), lambda i, j: (i, 0)),
                                    pl.BlockSpec((128, 512), lambda i, j: (0, j))],
                          out_specs=pl.BlockSpec((256, 512), lambda i, j: (i, j)))(a, b)
