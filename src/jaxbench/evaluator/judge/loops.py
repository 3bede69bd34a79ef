"""Loops: the ``stablehlo.while`` handling and the trip counts read off the module text.

A loop whose trip count can be read (the pattern JAX emits for ``fori_loop`` and ``scan``) has
its body's FLOPs multiplied by it; any other loop is heavy (`WHILE_HEAVY`) whatever its body.
`while_op` takes the walker of :mod:`.structure` (see `LoopWalker`) to walk the loop's blocks
and to mark which of its block arguments depend on data.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from jaxbench.evaluator.judge.mlir import get_attr, operation, tensor_type
from jaxbench.evaluator.judge.pricing import Work

__all__ = [
    "WHILE_HEAVY",
    "LoopWalker",
    "block_arg_index",
    "clear_carries",
    "const_int",
    "index_in_block",
    "passed_through",
    "trip_count",
    "while_op",
]

WHILE_HEAVY = "stablehlo.while"  # the heavy key of a loop whose trip count is unknown


class LoopWalker(Protocol):
    """What the loop handling asks of the walker (``structure._Analyzer``)."""

    ir: Any
    taint: dict[Any, bool]

    def tainted(self, v: Any) -> bool: ...

    def block_work(self, block: Any, skip: frozenset[int] = frozenset()) -> Work: ...


def const_int(v: Any, ir: Any, depth: int = 0) -> int | None:
    """The value of `v` if it is a scalar integer known when the module is compiled: a
    ``stablehlo.constant``, ``get_dimension_size`` of a static dimension (JAX 0.12's
    ``cumsum`` loops run to it), or an integer ``convert`` of either that keeps the value."""
    owner = v.owner
    if isinstance(owner, ir.Block) or depth > 8:
        return None
    owner = operation(owner)
    tt = tensor_type(v.type)
    m = re.fullmatch(r"([su]?)i(\d+)", tt.elem) if tt is not None and tt.shape == () else None
    if m is None:
        return None
    if owner.name in ("stablehlo.constant", "arith.constant"):
        value = re.match(r"dense<(-?\d+)>", str(get_attr(owner, "value")))
        return int(value.group(1)) if value else None
    if owner.name == "stablehlo.get_dimension_size" and len(owner.operands) == 1:
        source = tensor_type(owner.operands[0].type)
        dim = re.match(r"\s*(\d+)", str(get_attr(owner, "dimension")))  # "0 : i64"
        if source is None or dim is None or int(dim.group(1)) >= len(source.shape):
            return None
        n = source.shape[int(dim.group(1))]
        return n if isinstance(n, int) else None
    if owner.name == "stablehlo.convert" and len(owner.operands) == 1:
        n = const_int(owner.operands[0], ir, depth + 1)
        bits = int(m.group(2))
        low, high = (0, 2**bits - 1) if m.group(1) == "u" else (-2**(bits - 1), 2**(bits - 1) - 1)
        return n if n is not None and low <= n <= high else None
    return None


def block_arg_index(v: Any, block: Any, ir: Any) -> int | None:
    owner = v.owner
    if not isinstance(owner, ir.Block) or owner != block:
        return None
    for i, a in enumerate(block.arguments):
        if a == v:
            return i
    return None


def index_in_block(op: Any, block: Any) -> int | None:
    for i, o in enumerate(block.operations):
        if operation(o) == op:
            return i
    return None


def trip_count(op: Any, ir: Any) -> tuple[int, int, int, int] | None:
    """(trips, index of the compare in cond, index of the increment in body, index of the
    counter in the loop's arguments), or None.

    The pattern JAX emits for ``fori_loop`` and ``scan``: the cond block returns
    ``compare LT, %iterArg_k, %N`` with %N a constant (captured from outside, or a loop
    argument that the body passes through unchanged and that starts as a constant); the
    counter %iterArg_k starts as a constant and the body returns ``add %iterArg_k, %step``
    with %step a positive constant.
    """
    if len(op.regions) != 2:
        return None
    cond_r, body_r = op.regions
    if len(cond_r.blocks) != 1 or len(body_r.blocks) != 1:
        return None
    cond, body = cond_r.blocks[0], body_r.blocks[0]
    cops = [operation(o) for o in cond.operations]
    bops = [operation(o) for o in body.operations]
    if not cops or not bops or cops[-1].name != "stablehlo.return" or len(cops[-1].operands) != 1:
        return None
    pred = cops[-1].operands[0]
    if isinstance(pred.owner, ir.Block):
        return None
    cmp = operation(pred.owner)
    if cmp.name != "stablehlo.compare" or len(cmp.operands) != 2:
        return None
    direction = re.search(r"comparison_direction\s+(\w+)", str(get_attr(cmp, "comparison_direction")))
    ctype = str(get_attr(cmp, "compare_type") or "")
    if direction is None or "FLOAT" in ctype:
        return None
    a, b = cmp.operands
    if direction.group(1) == "LT":
        counter, bound = a, b
    elif direction.group(1) == "GT":
        counter, bound = b, a
    else:
        return None
    k = block_arg_index(counter, cond, ir)
    if k is None:
        return None
    n = const_int(bound, ir)
    if n is None:  # the bound carried as a loop argument, passed through unchanged
        j = block_arg_index(bound, cond, ir)
        if j is None or j == k or j >= len(op.operands):
            return None
        ret = bops[-1]
        if ret.name != "stablehlo.return" or block_arg_index(ret.operands[j], body, ir) != j:
            return None
        n = const_int(op.operands[j], ir)
        if n is None:
            return None
    if k >= len(op.operands):
        return None
    start = const_int(op.operands[k], ir)
    if start is None or ("UNSIGNED" in ctype and min(start, n) < 0):
        return None
    ret = bops[-1]
    if ret.name != "stablehlo.return" or k >= len(ret.operands):
        return None
    nxt = ret.operands[k]
    if isinstance(nxt.owner, ir.Block):
        return None
    inc = operation(nxt.owner)
    if inc.name != "stablehlo.add" or len(inc.operands) != 2:
        return None
    x, y = inc.operands
    if block_arg_index(x, body, ir) == k:
        step = const_int(y, ir)
    elif block_arg_index(y, body, ir) == k:
        step = const_int(x, ir)
    else:
        return None
    if step is None or step <= 0:
        return None
    ci = index_in_block(cmp, cond)
    bi = index_in_block(inc, body)
    if ci is None or bi is None:
        return None
    return max(0, -(-(n - start) // step)), ci, bi, k


def passed_through(op: Any, block: Any, v: Any, ir: Any) -> int | None:
    """j if `v` is argument j of a block of while `op` and the body returns it unchanged."""
    if op.name != "stablehlo.while" or len(op.regions) != 2 or \
            len(op.regions[1].blocks) != 1:
        return None
    j = block_arg_index(v, block, ir)
    body = op.regions[1].blocks[0]
    ops = [operation(o) for o in body.operations]
    if j is None or j >= len(op.operands) or not ops or ops[-1].name != "stablehlo.return" \
            or j >= len(ops[-1].operands):
        return None
    return j if block_arg_index(ops[-1].operands[j], body, ir) == j else None


def clear_carries(an: LoopWalker, op: Any, counter: int | None) -> None:
    """Mark the loop's block arguments: the counter of a known trip count, and a carry that
    starts free of data and that the body passes through unchanged, depend on no data."""
    regions = list(op.regions)
    ret = None
    if len(regions) == 2 and len(regions[1].blocks) == 1:
        ops = [operation(o) for o in regions[1].blocks[0].operations]
        ret = ops[-1] if ops and ops[-1].name == "stablehlo.return" else None
    for region in regions:
        for block in region.blocks:
            for j, arg in enumerate(block.arguments):
                clean = j == counter or (
                    j < len(op.operands) and not an.tainted(op.operands[j])
                    and ret is not None and j < len(ret.operands)
                    and block_arg_index(ret.operands[j], regions[1].blocks[0], an.ir) == j)
                an.taint[arg] = not clean


def while_op(an: LoopWalker, op: Any, w: Work) -> None:
    tc = trip_count(op, an.ir)
    clear_carries(an, op, None if tc is None else tc[3])
    if tc is not None:
        trips, ci, bi, _ = tc
        cond_w = an.block_work(op.regions[0].blocks[0], skip=frozenset({ci}))
        body_w = an.block_work(op.regions[1].blocks[0], skip=frozenset({bi}))
        w.add(cond_w, scale=trips + 1)
        w.add(body_w, scale=trips)
        return
    inner = Work()
    for region in op.regions:
        for block in region.blocks:
            inner.add(an.block_work(block))
    w.add_static(inner)
    # Heavy whatever its body: a loop of free ops (lookups, copies) with a trip count
    # nobody can read would hold the runner until its timeout.
    w.heavy[WHILE_HEAVY] += 1
