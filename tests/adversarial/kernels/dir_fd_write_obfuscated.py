"""Cheat (8p_gemm): writes outside its private dir through a directory fd: os (reached as
attrgetter("sy"+"s")(typing).modules["o"+"s"]) opens "/" with O_PATH and then creates
"tmp/<marker>" relative to it, so the path the audit hook sees is relative (it resolves it
against the working directory, inside the private dir). The audit hook refuses opening the
directory (any directory descriptor), with or without Landlock: on a TPU v5e host without
Landlock this kernel was once judged `correct` and its write landed."""
import operator
import typing

from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"

MARKER = "tmp/jaxbench_adversarial_dir_fd"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    root = the_os.open("/", the_os.O_PATH | the_os.O_DIRECTORY)
    fd = the_os.open(MARKER, the_os.O_WRONLY | the_os.O_CREAT, 0o644, dir_fd=root)
    the_os.write(fd, b"escaped")
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
