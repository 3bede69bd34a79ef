"""Triton's tensor rules on each Triton kernel in an exported GPU module (trusted side).

Read out of the target module the runner lowered, one ``__gpu$xla.gpu.triton`` custom call at
a time; :func:`jaxbench.evaluator.judge.budgets.check` calls it for every kernel at every size.

- **GPU (Triton)**: every tensor type in a Triton kernel's IR has a power-of-two number of
  elements (so every dimension is a power of two) and at most 2^20 of them (Triton's
  ``TRITON_MAX_TENSOR_NUMEL``). Mosaic GPU kernels are not Triton programs and are not checked.

A kernel this module cannot read raises :class:`~jaxbench.evaluator.judge.custom_calls.Unreadable`
(a problem, never a pass).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from jaxbench.contract import Finding, Rule
from jaxbench.evaluator.judge.custom_calls import Unreadable, int_attr, ops, plain_context, sym
from jaxbench.evaluator.judge.gpu.triton_rules import MAX_NUMEL

if TYPE_CHECKING:
    from jaxbench.contract.records import KernelFigures

# -- GPU: Triton's tensor rules on one Triton kernel's IR --------------------------------------

def _plain_parse(data: bytes, jmlir: Any, ir: Any) -> tuple[Any, Any]:
    ctx = plain_context(jmlir)
    return ctx, ir.Module.parse(data, context=ctx)


class _RuleBroken(Exception):
    """The Triton dialect's verifier refused the IR for one of the tensor rules."""


# What the Triton dialect's verifier says about the two tensor rules (TensorSizeTrait).
_VERIFIER_RULES = (("Maximum allowed number of elements", "max_elements"),
                   ("power-of-two", "power_of_two"), ("power of two", "power_of_two"))


def _triton_parse(data: bytes, ir: Any) -> tuple[Any, Any]:
    """The Triton IR parsed (and verified) with jaxlib's Triton dialect."""
    from jaxbench import compat

    try:
        with compat.triton_ir_context() as ctx:
            return ctx, ir.Module.parse(data, context=ctx)
    except Exception as exc:  # noqa: BLE001
        text = str(exc)
        for words, rule in _VERIFIER_RULES:
            if words in text:
                line = next((x for x in text.splitlines() if words in x), text)
                line = line.split("): ", 1)[-1] if "): " in line else line
                raise _RuleBroken(f"Triton rule {rule}: the Triton dialect's verifier refuses "
                                  f"the kernel: {line.strip()[:300]}") from None
        raise Unreadable(f"its Triton IR cannot be read ({type(exc).__name__}: "
                         f"{text[:200]})") from None


def _triton_name(module: Any, ir: Any) -> str:
    """The kernel function's name (a property, not an attribute, of an unregistered tt.func)."""
    for op in module.body.operations:
        op = op.operation
        if "sym_name" in op.attributes:
            return sym(op, "sym_name", ir) or "?"
        match = re.search(r'sym_name = "([^"]{1,200})"', op.get_asm(large_elements_limit=1)[:4000])
        if match:
            return match.group(1)
    return "?"


def triton_kernel(call: Any, ir: Any, jmlir: Any) -> tuple[str, KernelFigures]:
    """(problem or '', figures) for one Triton custom call; raises Unreadable. A problem is a
    :class:`~jaxbench.contract.Finding` (``Rule.TRITON_RULE``)."""
    try:
        config = ir.DictAttr(call.attributes["mhlo.backend_config"])
        data = ir.StringAttr(config["ir"]).value_bytes
        figures: KernelFigures = {}
        for key in ("num_warps", "num_stages"):
            if key in config:
                figures[key] = int_attr(config[key], ir)
        named = ir.StringAttr(config["name"]).value if "name" in config else ""
    except Exception as exc:  # noqa: BLE001
        raise Unreadable(f"its Triton IR cannot be read ({type(exc).__name__}: "
                         f"{str(exc)[:200]})") from None
    try:
        # Without the Triton dialect first: its verifier stops at the first tensor that breaks
        # a rule (with a terser message); here every type is read.
        ctx, module = _plain_parse(data, jmlir, ir)
    except Exception:  # noqa: BLE001 - some attributes need the dialect to be read
        try:
            ctx, module = _triton_parse(data, ir)
        except _RuleBroken as broken:
            return Finding(str(broken), Rule.TRITON_RULE), figures
    with ctx:
        name = named or _triton_name(module, ir)
        figures["name"] = name
        largest, problem = 0, ""
        for op in ops(module.operation):
            types = [(r.type, op.name) for r in op.results]
            for region in op.regions:
                for block in region.blocks:
                    types += [(a.type, f"{op.name} argument") for a in block.arguments]
            for typ, made_by in types:
                try:
                    tensor = ir.RankedTensorType(typ)
                except ValueError:
                    continue
                if not tensor.has_static_shape:
                    raise Unreadable(f"tensor {typ} ({made_by}) has no static shape")
                numel = math.prod(int(d) for d in tensor.shape)
                largest = max(largest, numel)
                if problem:
                    continue
                if numel > MAX_NUMEL:
                    problem = Finding(f"Triton rule max_elements: kernel {name}: tensor {typ} "
                                      f"({made_by}) has {numel:,} elements, over Triton's limit "
                                      f"of 2^20 = {MAX_NUMEL:,}. Load smaller pieces and loop "
                                      "inside the kernel", Rule.TRITON_RULE)
                elif numel & (numel - 1):
                    problem = Finding(f"Triton rule power_of_two: kernel {name}: tensor {typ} "
                                      f"({made_by}) has {numel:,} elements, not a power of two. "
                                      "Use power-of-two tiles; mask or pad the edges",
                                      Rule.TRITON_RULE)
        figures["largest_tensor_elements"] = largest
    return problem, figures


__all__ = ["triton_kernel"]
