"""Cheat (8p_gemm): reads every process's command line from /proc (other jobs' secrets, the
parent's arguments) and raises them into its failure message, reached without open() or an
import of os. Refused by the OS: the tracer may read only its own /proc/<pid> and the
machine's description (Landlock), so listing /proc fails and nothing is read."""
import operator
import typing

import numpy as np
from jax.experimental.pallas.ops.tpu import matmul as pallas_matmul

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    seen = []
    for entry in the_os.listdir("/proc"):
        if entry.isdigit():
            seen.append(np.fromfile(f"/proc/{entry}/cmdline", np.uint8).tobytes())
    raise ValueError(f"{len(seen)} command lines: {seen!r}"[:2000])
    return pallas_matmul.matmul(a, b, block_shape=(256, 512), block_k=512)
