"""Cheat (8p_gemm): heap scan through sys.modules["gc"] with computed names, looking for the
job dict that holds the trial keys. The audit hook refuses gc.get_objects."""
import operator
import typing

TARGET = "tpu"


def kernel(a, b):
    get = operator.attrgetter
    g = get("mod" + "ules")(get("sy" + "s")(typing))["g" + "c"]
    found = [o for o in get("get_" + "objects")(g)() if isinstance(o, dict) and "trial_keys" in o]
    return found[0] if found else a
