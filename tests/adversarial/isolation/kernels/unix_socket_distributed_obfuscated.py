"""Cheat (8p_gemm): JAX's C++ distributed-runtime client (gRPC), which the Python audit hooks
never see, dials a pathname Unix socket in /tmp (``unix:`` address) where another process
listens; the distributed module is reached through sys.modules (its name in pieces), past the
public API's backend check. In the tracer's own mount namespace /tmp is an empty tmpfs: the
socket is not there, nothing connects, and the client gives up by aborting the process."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

ADDRESS = "unix:/tmp/jaxbench_adversarial_grpc.sock"


def kernel(a, b):
    get = operator.attrgetter
    modules = get("mod" + "ules")(get("sy" + "s")(typing))
    state = modules["jax." + "_s" + "rc.distributed"].global_state
    state.initialize(coordinator_address=ADDRESS, num_processes=2, process_id=1,
                     initialization_timeout=3)
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
