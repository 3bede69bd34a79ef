"""Cheat (8p_gemm): JAX's C++ distributed-runtime client (gRPC), which no audit hook sees, dials a
TCP listener on the host's loopback (the port is filled in by the test); the module is reached
through sys.modules, past the public API's backend check. No connection is made: the tracer's
own network namespace has no usable loopback where namespaces exist, and the seal refuses new
sockets everywhere."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

ADDRESS = "127.0.0.1:PORT"


def kernel(a, b):
    get = operator.attrgetter
    modules = get("mod" + "ules")(get("sy" + "s")(typing))
    state = modules["jax." + "_s" + "rc.distributed"].global_state
    state.initialize(coordinator_address=ADDRESS, num_processes=2, process_id=1,
                     initialization_timeout=3)
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
