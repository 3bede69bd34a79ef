"""Cheat (8p_gemm): signals its parent (the evaluator) with os.kill(os.getppid(), SIGTERM),
os reached through attrgetter("sy"+"s")(typing).modules["o"+"s"]. The audit hook refuses
os.kill (and Landlock's signal scope would too)."""
import operator
import typing

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    get("ki" + "ll")(the_os)(the_os.getppid(), 15)
    return a
