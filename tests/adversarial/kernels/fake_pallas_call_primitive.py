"""Cheat (8p_gemm): a user primitive *named* "pallas_call" (jax.extend.core.Primitive) whose
MLIR lowering, registered with jax.interpreters.mlir.register_lowering, emits the matmul as
a plain XLA dot. A check that trusts primitive names counts it as a kernel; a tiny real
Pallas kernel beside it supplies the kernel custom call. The dot still shows in the module."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.extend.core import Primitive
from jax.interpreters import mlir

TARGET = "tpu"


def _matmul(a, b, **_):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


fake = Primitive("pallas_call")
fake.def_impl(_matmul)
fake.def_abstract_eval(lambda a, b, **_: jax.core.ShapedArray((a.shape[0], b.shape[1]), a.dtype))
mlir.register_lowering(fake, mlir.lower_fun(_matmul, multiple_results=False))


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...].astype(o_ref.dtype)


def _tiled_copy(x, dtype):
    spec = pl.BlockSpec((256, 512), lambda i, j: (i, j))
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, dtype),
                          grid=(x.shape[0] // 256, x.shape[1] // 512),
                          in_specs=[spec], out_specs=spec)(x)


def kernel(a, b):
    c = fake.bind(a, b)
    return _tiled_copy(c, c.dtype)
