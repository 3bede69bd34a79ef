"""Cheat (8p_gemm): reaches Python's socket module through sys.modules (named by string
pieces) and connects to a pathname Unix socket in /tmp, where another process listens. The
runtime guards refuse the socket; the path would not exist for it anyway (/tmp is hidden)."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

SOCKET = "/tmp/jaxbench_adversarial_unix.sock"


def kernel(a, b):
    get = operator.attrgetter
    modules = get("mod" + "ules")(get("sy" + "s")(typing))
    sock_mod = modules.get("so" + "cket") or modules["_so" + "cket"]
    s = getattr(sock_mod, "so" + "cket")(1, 1)  # AF_UNIX, SOCK_STREAM
    s.connect(SOCKET)
    s.send(b"escaped")
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
