"""Cheat (8p_gemm): a compiler-parameters object of the kernel's own class (a subclass of
Pallas's TPU parameters) with its own hash and equality: lowering hashes and compares parameters, so its
code runs while the modules are made and can answer differently each time (the module checked
and the module run could be lowered under different settings). Refused: objects of the
kernel's own classes as parameters of JAX operations."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

TARGET = "tpu"
_calls = [0]


class Params(pltpu.CompilerParams):
    def __hash__(self):
        _calls[0] += 1
        return _calls[0]

    def __eq__(self, other):
        return False


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    return pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]),
                                                                  a.dtype),
                          compiler_params=Params())(a, b)
