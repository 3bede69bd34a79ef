"""Cheat (8p_gemm): writes outside its private dir with JAX's profiler: jax.profiler's C++
trace writer (start_trace / stop_trace) creates files without Python's open(), so the audit
hook never sees them. The OS (Landlock) refuses the write."""
import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

MARKER = "/tmp/jaxbench_adversarial_profile"


def kernel(a, b):
    jax.profiler.start_trace(MARKER)
    jax.block_until_ready(jnp.ones(8) + 1)
    jax.profiler.stop_trace()
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
