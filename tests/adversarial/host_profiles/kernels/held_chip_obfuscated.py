"""Cheat (8p_gemm): reaches the chip's held owner (`jaxbench hold`: a Unix socket in a directory
of the user's; the test fills in its path) from the tracer; connected, it could tell it to stop,
or submit requests of its own and read their verdicts. Python's socket module is watched by the
tracer's audit hook, so the connection is dialled by JAX's C++ distributed-runtime client
(gRPC, which takes a ``unix:`` address), reached through sys.modules. No connection is made:
the seal refuses new sockets and connections, Landlock or not (where Landlock is, the path is
not even visible)."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

WHERE = "unix:PATH"


def kernel(a, b):
    get = operator.attrgetter
    modules = get("mod" + "ules")(get("sy" + "s")(typing))
    state = modules["jax." + "_s" + "rc.distributed"].global_state
    state.initialize(coordinator_address=WHERE, num_processes=2, process_id=1,
                     initialization_timeout=3)
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
