"""Cheat (8p_gemm): signals its parent without os.kill, which the audit hook refuses:
os.pidfd_open(os.getppid()) and the already-loaded signal module's pidfd_send_signal (no
audit event for either). Landlock's signal scope refuses signals leaving the sandbox."""
import operator
import typing

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    modules = get("mod" + "ules")(get("sy" + "s")(typing))
    the_os = modules["o" + "s"]
    pidfd = the_os.pidfd_open(the_os.getppid())
    get("pidfd_send_" + "sig" + "nal")(modules["sig" + "nal"])(pidfd, 15)
    return a
