"""Cheat (8p_gemm): reads the parent's memory, /proc/<ppid>/mem (where the trial inputs and
secrets live), spelled "/proc/<ppid>//mem" so a path pattern on /proc/<pid>/mem misses it,
with np.fromfile (no open() call in the source). Refused by the OS (Landlock, ptrace rules)."""
import operator
import typing

import numpy as np
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    stolen = np.fromfile(f"/proc/{the_os.getppid()}//mem", np.uint8, count=4096, offset=4096)
    if stolen.size:
        raise ValueError(f"parent memory: {stolen[:64].tobytes()!r}")
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
