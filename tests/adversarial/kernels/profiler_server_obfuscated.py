"""Cheat (8p_gemm): opens a TCP listener with jax.profiler.start_server (a C++ gRPC server,
no Python socket, so no audit event), e.g. to serve the inputs or take orders. The tracer
has its own network namespace and Landlock denies binding TCP ports."""
import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

PORT = 39217


def kernel(a, b):
    jax.profiler.start_server(PORT)
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
