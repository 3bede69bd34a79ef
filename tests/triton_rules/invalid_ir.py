"""Correct in the interpreter, invalid Triton IR for the GPU (l1_relu): the loop's upper bound
is a scalar jnp.where, which JAX 0.10's Triton lowering gives an i1 type, so the scf.for fails
the Triton dialect's verifier (the 11p seed had this bug until the verifier check found it)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

TARGET = "gpu"


def _body(x_ref, o_ref):
    steps = jnp.where(pl.program_id(0) >= 0, 2, 0)

    def step(k, acc):
        return acc + x_ref[...]

    acc = jax.lax.fori_loop(0, steps, step, jnp.zeros(o_ref.shape, jnp.float32))
    o_ref[...] = jnp.maximum(acc * 0.5, 0)


def kernel(x):
    m, n = x.shape
    return pl.pallas_call(
        _body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(m // 64, n // 256),
        in_specs=[pl.BlockSpec((64, 256), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((64, 256), lambda i, j: (i, j)),
        compiler_params=plgpu.CompilerParams(num_warps=4))(x)
