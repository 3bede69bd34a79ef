"""Cheat (8p_gemm): writes outside its private dir with JAX's profiler: jax.profiler's C++
trace writer (start_trace / stop_trace) creates files without Python's open(), so the audit
hook never sees them. The OS (Landlock) refuses the write."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

MARKER = "/tmp/jaxbench_adversarial_profile"


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    jax.profiler.start_trace(MARKER)
    jax.block_until_ready(jnp.ones(8) + 1)
    jax.profiler.stop_trace()
    return pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct(
        (a.shape[0], b.shape[1]), a.dtype))(a, b)
