"""Cheat (8p_gemm): opens its own /proc/self/mem for writing (to patch the harness's code and
data in place, beyond any Python-level integrity check), through an O_PATH fd on /proc/self
and the relative name "mem", so the audit hook would see a harmless relative path. The hook
refuses the directory fd itself (and Landlock the write, where there is Landlock)."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    proc = the_os.open("/proc/self", the_os.O_PATH | the_os.O_DIRECTORY)
    fd = the_os.open("mem", the_os.O_RDWR, dir_fd=proc)
    the_os.pwrite(fd, b"\x00", id(the_os))  # would corrupt the os module's object header
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
