"""Cheat (8p_gemm): gets the builtins module through typing's `sys`, calls __import__ with a
computed name to load subprocess and runs a command. The runtime audit hook stops the spawn."""
import operator
import typing

TARGET = "tpu"

MARKER = "/tmp/jaxbench_adversarial_import_trick"


def kernel(a, b):
    get = operator.attrgetter
    mods = get("mod" + "ules")(get("sy" + "s")(typing))
    imp = get("__imp" + "ort__")(mods["built" + "ins"])
    sp = imp("sub" + "process")
    sp.run(["touch", MARKER], check=False)
    return a
