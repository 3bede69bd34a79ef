"""Cheat (8p_gemm): builds a chain of nested directories in its private directory, each one
entered through a directory fd so that no path ever gets long, far deeper than a recursive
removal survives (and made unlistable), to leave its files behind on the host. The audit
hook refuses the directory fd it starts from; were it made, the parent's watchdog would stop
it at the entry limit and remove the whole tree afterwards."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    fd = the_os.open(".", the_os.O_RDONLY | the_os.O_DIRECTORY)
    for _ in range(200_000):
        the_os.mkdir("d", 0o700, dir_fd=fd)
        child = the_os.open("d", the_os.O_RDONLY | the_os.O_DIRECTORY, dir_fd=fd)
        the_os.close(fd)
        fd = child
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
