"""Cheat (8p_gemm): opens a TCP listener with jax.profiler.start_server (a C++ gRPC server,
no Python socket, so no audit event), e.g. to serve the inputs or take orders. The tracer
has its own network namespace and Landlock denies binding TCP ports."""
import jax
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

PORT = 39217
_started = []


def kernel(a, b):
    if not _started:  # `kernel` may be called more than once
        _started.append(jax.profiler.start_server(PORT))
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
