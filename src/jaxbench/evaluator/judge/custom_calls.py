"""The kernel custom calls of an exported module, read with jaxlib's MLIR bindings (trusted side).

Shared by the targets' budget rules (:mod:`.tpu.mosaic_vmem`, :mod:`.gpu.triton_budgets`) and
their dispatcher (:mod:`.budgets`): the bindings and a context that accepts unregistered
dialects, a walk over an op's nested ops, symbol and integer attributes, and every custom call
to a kernel target reachable from ``@main`` with the ``jaxbench_kernel_<i>`` region (the
``pallas_call`` index) it sits in. A kernel that cannot be read raises :class:`Unreadable`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

TPU_TARGET = "tpu_custom_call"
TRITON_TARGET = "__gpu$xla.gpu.triton"
MOSAIC_GPU_TARGETS = ("mosaic_gpu", "mosaic_gpu_v2")
REGION = re.compile(r"jaxbench_kernel_(\d+)")


class Unreadable(ValueError):
    """A kernel whose budget cannot be read or bounded from the module."""


def bindings() -> tuple[Any, Any]:
    """(jaxlib's mlir module, its ir module)."""
    from jaxbench.evaluator.judge.mlir import mlir_bindings

    return mlir_bindings()


def plain_context(jmlir: Any) -> Any:
    """An MLIR context of jaxlib's that parses unregistered dialects as generic ops."""
    ctx = jmlir.make_ir_context()
    ctx.allow_unregistered_dialects = True
    return ctx


def int_attr(attr: Any, ir: Any) -> int:
    return int(ir.IntegerAttr(attr).value)


# -- the kernel custom calls of a module, with the kernel region each sits in ------------------

def ops(op: Any) -> Iterator[Any]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from ops(inner.operation)


def sym(op: Any, name: str, ir: Any) -> str | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    try:
        return ir.StringAttr(attr).value
    except ValueError:
        try:
            return ir.FlatSymbolRefAttr(attr).value
        except ValueError:
            return None


def kernel_calls(module: Any, ir: Any, targets: tuple[str, ...]) -> list[tuple[int | None, Any]]:
    """(pallas_call index from its ``jaxbench_kernel_<i>`` region or None, custom call op) for
    every custom call to ``targets`` reachable from ``@main``, in module order."""
    funcs = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func":
            funcs[sym(op, "sym_name", ir)] = op
    found: list[tuple[int | None, Any]] = []
    seen: set[tuple[str, int | None]] = set()

    def visit(name: str, index: int | None, stack: tuple[str, ...]) -> None:
        if name in stack or name not in funcs or (name, index) in seen:
            return
        seen.add((name, index))
        match = REGION.search(name)
        if match:
            index = int(match.group(1))
        for op in ops(funcs[name]):
            if op.name == "stablehlo.custom_call":
                if sym(op, "call_target_name", ir) in targets:
                    found.append((index, op))
            elif op.name == "func.call":
                callee = sym(op, "callee", ir)
                if callee is not None:
                    visit(callee, index, (*stack, name))

    visit("main", None, ())
    return found


def label(index: int | None) -> str:
    return f"pallas_call #{index}" if index is not None else "a kernel outside the kernel regions"


__all__ = ["MOSAIC_GPU_TARGETS", "REGION", "TPU_TARGET", "TRITON_TARGET", "Unreadable",
           "bindings", "int_attr", "kernel_calls", "label", "ops", "plain_context", "sym"]
