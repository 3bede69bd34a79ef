"""Cheat (8p_gemm): reaches os.system as operator.attrgetter("sy"+"s")(typing).modules["os"]
with every name computed, so no denied name or string appears. The audit hook refuses it."""
import operator
import typing

TARGET = "tpu"

MARKER = "/tmp/jaxbench_adversarial_os_system"


def kernel(a, b):
    get = operator.attrgetter
    the_os = get("mod" + "ules")(get("sy" + "s")(typing))["o" + "s"]
    get("sy" + "stem")(the_os)("touch " + MARKER)
    return a
