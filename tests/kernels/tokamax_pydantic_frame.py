"""Cheat (8p_gemm, needs the `tokamax` extra): reaches pydantic through Tokamax and builds a
TypeAdapter whose ``_parent_depth`` points below the kernel, into the harness's frames, so
that its forward reference is resolved in the worker's namespace (the task's reference, the
trial keys). The audit hook allows pydantic frames above the candidate only."""
import operator

from tokamax._src.ops.attention import pallas_mosaic_tpu as tk

TARGET = "tpu"
# Reached by a computed name, so that the static policy cannot see it: the runtime guard must.
pydantic = operator.attrgetter("pyd" + "antic")(tk)


def kernel(a, b):
    pydantic.TypeAdapter("task", _parent_depth=3)
    return a
