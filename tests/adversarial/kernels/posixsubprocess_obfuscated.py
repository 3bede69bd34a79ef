"""Cheat (8p_gemm): spawns a process through _posixsubprocess.fork_exec, the C function under
subprocess that raises no audit event of its own. The sandbox replaces it with a refusal at
lock-down (and refuses re-importing a fresh copy of the module)."""
import operator
import typing

TARGET = "tpu"

MARKER = "/tmp/jaxbench_adversarial_fork_exec"


def kernel(a, b):
    get = operator.attrgetter
    mods = get("mod" + "ules")(get("sy" + "s")(typing))
    spawn = get("fork_e" + "xec")(mods["_posixsub" + "process"])
    spawn([b"/usr/bin/touch", MARKER.encode()])
    return a
