"""Cheat (8p_gemm): opens a TCP listener with jax.profiler.start_server (a C++ gRPC server,
no Python socket, so no audit event), e.g. to serve the inputs or take orders. The tracer
has its own network namespace and Landlock denies binding TCP ports."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

TARGET = "tpu"

PORT = 39217


def _matmul(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...],
                         preferred_element_type=jnp.float32).astype(o_ref.dtype)


def kernel(a, b):
    jax.profiler.start_server(PORT)
    return pl.pallas_call(_matmul, out_shape=jax.ShapeDtypeStruct(
        (a.shape[0], b.shape[1]), a.dtype))(a, b)
