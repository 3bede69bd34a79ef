"""Structural analysis of an exported StableHLO module: its kernels and the work done outside them.

The judge runs the module text a candidate's process exported (``jax.export.Exported``), so
everything it concludes about that module is read from the same text, parsed with the MLIR
bindings that ship in jaxlib. Nothing the candidate reports about itself is used.

What is counted:

* kernel custom calls (``tpu_custom_call`` on TPU; Triton / Mosaic GPU on CUDA; none on CPU),
* every ``func.func`` whose name starts with the kernel prefix (a *kernel region*: the function a
  ``jax.jit``-wrapped kernel lowers to), with what it does besides its kernel calls,
* the work done outside kernel regions and kernel calls, in FLOPs (matmuls and convolutions
  exactly, one per element for elementwise math of any dtype, loops multiplied by their trip
  count), data movement being free,
* lookups as work: a gather, dynamic_slice, dynamic_update_slice or scatter whose indices depend
  on data (a function argument or a kernel result, not only constants, iota and loop counters)
  costs ``LOOKUP_FLOPS_PER_ELEMENT`` per element it moves, unless it only reads the task's own
  inputs (then it is data movement); a non-splat constant costs one FLOP per element (a table
  computed when the module was made stands for the work of computing it),
* ``heavy``: what cannot be priced in FLOPs (library and callback custom calls, loops with a trip
  count that cannot be read off the text whatever their body, collectives, RNG, ops no rule
  covers),
* ``outside_op_list``: every op outside kernel regions and kernel calls, in order, as a canonical
  string (name, operand and result types, attributes; no SSA names, no locations), so that two
  exports of one trace can be compared op for op.

All counts are static: an op inside a loop body counts once in ``outside_op_counts``, ``heavy``,
``kernel_calls`` and ``custom_call_targets``; only FLOPs are multiplied by trip counts. A function
called from two call sites counts twice.

This module holds the analysis (`analyze`, its report and the walker); reading the module text is
in :mod:`.mlir`, what an op costs in :mod:`.pricing`, loops and their trip counts in :mod:`.loops`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from jaxbench.evaluator.judge.loops import passed_through, while_op
from jaxbench.evaluator.judge.mlir import (
    canonical,
    func_signature,
    operation,
    parse_module,
    str_attr,
    symbol_ref,
)
from jaxbench.evaluator.judge.pricing import (
    ELEMENTWISE_OPS,
    FREE_CUSTOM_CALL_TARGETS,
    FREE_OPS,
    LAYOUT_DATA_OPERANDS,
    LOOKUP_FLOPS_PER_ELEMENT,
    OP_PRICES,
    Work,
    elementwise,
    written_bytes,
)

__all__ = [
    "FREE_CUSTOM_CALL_TARGETS",
    "FREE_OPS",
    "KERNEL_TARGETS",
    "LOOKUP_FLOPS_PER_ELEMENT",
    "ModuleReport",
    "RegionInfo",
    "analyze",
    "is_kernel_region_name",
    "is_kernel_target",
]

TPU_KERNEL_TARGETS = frozenset({"tpu_custom_call"})
CUDA_KERNEL_TARGETS = frozenset({"__gpu$xla.gpu.triton", "mosaic_gpu", "mosaic_gpu_v2"})
CPU_KERNEL_TARGETS: frozenset[str] = frozenset()
KERNEL_TARGETS: dict[str, frozenset[str]] = {
    "tpu": TPU_KERNEL_TARGETS,
    "cuda": CUDA_KERNEL_TARGETS,
    "cpu": CPU_KERNEL_TARGETS,
}

# Ops whose regions run once, in line: their body is counted as if it were not nested.
_TRANSPARENT_OPS = frozenset({"sdy.manual_computation", "sdy.named_computation"})

RECURSIVE_CALL_HEAVY = "func.call (recursive)"
UNRESOLVED_CALL_HEAVY = "func.call (unresolved)"


def is_kernel_target(name: str, platform: str) -> bool:
    """Whether custom-call target `name` is a Pallas kernel on `platform`."""
    return name in KERNEL_TARGETS.get(platform, frozenset())


def is_kernel_region_name(name: str, prefix: str) -> bool:
    """Whether function `name` is a kernel region: `prefix` itself or `prefix` plus a suffix.

    JAX names the private function of ``jax.jit(jaxbench_kernel_0)`` after the Python function
    and appends ``_0``, ``_1``... when two distinct functions share a name; some versions wrap it
    as ``jit_<name>`` or ``jit(<name>)``.
    """
    name = name.strip('"')
    for wrapper in ("jit_", "jit("):
        if name.startswith(wrapper) and not prefix.startswith(wrapper):
            name = name[len(wrapper):]
    return name.startswith(prefix)


@dataclass
class RegionInfo:
    """A ``func.func`` whose name starts with the kernel prefix."""

    name: str
    arg_types: list[str]
    result_types: list[str]
    kernel_calls: int  # kernel custom calls inside it (and in the non-kernel functions it calls)
    flops: float  # work inside it outside the kernel custom calls
    ops: dict[str, float] = field(default_factory=dict)
    heavy: dict[str, int] = field(default_factory=dict)
    call_sites: int = 0  # times it is called from @main, counting every call path


@dataclass
class ModuleReport:
    """What an exported module does, read from its text."""

    platform: str
    kernel_calls: int  # kernel custom calls reachable from @main, inside kernel regions or not
    custom_call_targets: dict[str, int]  # every custom call reachable from @main, by target
    outside_flops: float  # work outside kernel regions and kernel calls
    outside_ops: dict[str, float]  # the same, by op name
    heavy: dict[str, int]  # outside work that cannot be priced in FLOPs, name -> count
    kernel_regions: list[RegionInfo]  # every function named like a kernel region, in module order
    outside_op_counts: dict[str, int]  # op names outside kernel regions, a multiset
    main_signature: tuple[list[str], list[str]]  # (@main input types, @main result types)
    kernel_calls_outside_regions: int = 0  # kernel custom calls not inside any kernel region
    # Every op outside kernel regions, in walk order (nested blocks between "^bb(...)" and
    # "^end"), as a canonical string: the interpret-mode export must equal the target's.
    outside_op_list: list[str] = field(default_factory=list)
    # Bytes the ops outside kernel calls write (loops multiplied by their trip counts).
    outside_bytes: float = 0.0


class _Analyzer:
    """The walker: every op reachable from @main, its work (priced by `pricing`, loops by
    `loops`) and whether its results depend on data."""

    def __init__(self, module: Any, ir: Any, platform: str, kernel_prefix: str):
        self.ir = ir
        self.platform = platform
        self.kernel_prefix = kernel_prefix
        self.kernel_targets = KERNEL_TARGETS[platform]
        self.funcs: dict[str, Any] = {}
        for op in module.body.operations:
            op = operation(op)
            if op.name == "func.func":
                name = str_attr(op, "sym_name")
                if name is not None:
                    self.funcs[name] = op
        # (function, its arguments' (depends on data, is raw input)) -> its work
        self.memo: dict[tuple[str, tuple[tuple[bool, bool], ...]], Work] = {}
        self.active: set[str] = set()  # functions being evaluated (a call to one is recursive)
        self.arg_ctx: dict[Any, tuple[bool, bool]] = {}  # function argument -> its call's context
        self.taint: dict[Any, bool] = {}  # value -> whether it depends on data (see `tainted`)
        self.raw_memo: dict[Any, bool] = {}  # value -> whether it is the task's input, moved

    # -- functions ------------------------------------------------------------------------

    def is_region(self, name: str) -> bool:
        return is_kernel_region_name(name, self.kernel_prefix)

    def func_work(self, name: str, ctx: tuple[tuple[bool, bool], ...] | None = None
                  ) -> Work | None:
        """The work of function `name` called with arguments whose (depends on data, is the raw
        input) are `ctx` (None: @main's, data and raw; any other function's, data and not raw);
        None for a recursive call. Analysed once per distinct context: a helper JAX outlines
        (``dynamic_index_in_dim`` in a scan) is priced for what its call site passes it."""
        fn = self.funcs[name]
        blocks = [b for region in fn.regions for b in region.blocks]
        args = list(blocks[0].arguments) if blocks else []
        if ctx is None:
            ctx = tuple((True, name == "main") for _ in args)
        key = (name, ctx)
        if key in self.memo:
            return self.memo[key]
        if name in self.active:
            return None
        self.active.add(name)
        for i, a in enumerate(args):
            self.arg_ctx[a] = ctx[i] if i < len(ctx) else (True, False)
        self.raw_memo.clear()  # it holds values of this function from another context
        try:
            w = Work()
            for block in blocks:
                w.add(self.block_work(block))
        finally:
            self.active.discard(name)
            self.raw_memo.clear()
        self.memo[key] = w
        return w

    def call(self, w: Work, callee: str | None, operands: Any = ()) -> None:
        if callee is None or callee not in self.funcs:
            w.heavy[UNRESOLVED_CALL_HEAVY] += 1
            return
        cw = self.func_work(callee, tuple((self.tainted(v), self.raw(v)) for v in operands))
        if cw is None:
            w.heavy[RECURSIVE_CALL_HEAVY] += 1
            return
        if self.is_region(callee):
            # A kernel region: its ops stay out of the caller's op multiset (the interpret-mode
            # export fills regions with interpreter code), but the work it does besides its
            # kernel calls counts like any other, multiplied by the loops around the call.
            w.region_calls[callee] += 1
            w.region_calls.update(cw.region_calls)
            w.kernel_calls += cw.kernel_calls
            w.targets.update(cw.targets)
            w.heavy.update(cw.heavy)
            w.flops += cw.flops
            w.bytes += cw.bytes
            for k, v in cw.ops.items():
                w.ops[k] += v
            return
        w.add(cw)

    # -- blocks and ops ---------------------------------------------------------------------

    def block_work(self, block: Any, skip: frozenset[int] = frozenset()) -> Work:
        w = Work()
        w.op_list.append(f"^bb({', '.join(str(a.type) for a in block.arguments)})")
        for i, op in enumerate(block.operations):
            self.op_work(operation(op), w, count_flops=i not in skip)
        w.op_list.append("^end")
        return w

    def regions_static(self, op: Any) -> Work:
        """Static counts of the ops nested in `op` (reducer bodies, comparators): no FLOPs."""
        w = Work()
        for region in op.regions:
            for block in region.blocks:
                w.add_static(self.block_work(block))
        return w

    def op_work(self, op: Any, w: Work, count_flops: bool = True) -> None:
        name = op.name
        w.op_counts[name] += 1
        w.op_list.append(canonical(op, self.inlined_symbol(op, name)))
        if count_flops:
            w.bytes += written_bytes(op)
        self.priced_op(op, name, w, count_flops)
        self.mark(op, name)

    def inlined_symbol(self, op: Any, name: str) -> str | None:
        """The attribute naming a callee whose body `call` lists right after the call op.

        Normalised away in ``outside_op_list``, the one difference found between the two exports
        of shipped kernels: private functions' names get numeric suffixes in module order
        (``@_pad_1`` in the target export, ``@_pad_4`` in the interpret-mode one, whose kernel
        regions hold interpreter functions of the same names). The name is harmless: the body
        it resolves to is compared op for op. Kernel regions keep their names (their bodies are
        not listed; both exports name them alike)."""
        attr = {"func.call": "callee", "stablehlo.composite": "decomposition"}.get(name)
        if attr is None:
            return None
        callee = symbol_ref(op, attr)
        if callee is None or callee not in self.funcs or self.is_region(callee):
            return None
        return attr

    def priced_op(self, op: Any, name: str, w: Work, count_flops: bool) -> None:
        if name in FREE_OPS:
            return
        if name in ELEMENTWISE_OPS:
            elementwise(op, name, w, count_flops)
            return
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, op, w)
            return
        if name in _TRANSPARENT_OPS:
            for region in op.regions:
                for block in region.blocks:
                    w.add(self.block_work(block))
            return
        # No rule: report it, and still look inside for kernels and other heavy ops.
        w.heavy[name] += 1
        for region in op.regions:
            for block in region.blocks:
                w.add(self.block_work(block))

    # -- data dependence ----------------------------------------------------------------------

    def mark(self, op: Any, name: str) -> None:
        """Record whether `op`'s results depend on data. Values are walked in order, so the
        operands of an op (and what its regions capture) are marked before it."""
        known = name in FREE_OPS or name in ELEMENTWISE_OPS or name in _HANDLERS \
            or name in _TRANSPARENT_OPS
        if name == "stablehlo.custom_call" or not known:
            t = True  # kernels, library calls and unknown ops: anything
        elif name == "func.call" and self.is_region(symbol_ref(op, "callee") or ""):
            t = True  # a kernel's results
        else:
            t = any(self.tainted(v) for v in op.operands) or self.captures_data(op)
        for r in op.results:
            self.taint[r] = t

    def captures_data(self, op: Any) -> bool:
        """Whether an op nested in `op`'s regions uses a value that depends on data."""
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = operation(inner)
                    if any(self.tainted(v) for v in inner.operands) or self.captures_data(inner):
                        return True
        return False

    def tainted(self, v: Any) -> bool:
        """Whether value `v` may depend on the module's inputs or a kernel's results (rather than
        only on constants, iota and the counters of loops with a known trip count)."""
        t = self.taint.get(v)
        if t is not None:
            return t
        owner = v.owner
        if isinstance(owner, self.ir.Block):
            parent = operation(owner.owner)
            if parent.name == "func.func":
                return self.arg_ctx.get(v, (True, False))[0]
            if parent.name == "stablehlo.while":
                return True  # a loop carry `loops.while_op` did not clear
            # reducer, comparator and in-line region arguments: elements of the op's operands
            return any(self.tainted(x) for x in parent.operands)
        return True  # not walked (yet): assume the worst

    def raw(self, v: Any, depth: int = 0) -> bool:
        """Whether `v` is the task's input data, only moved: an argument of @main through layout
        ops (reshape, slice, convert, concatenate, gather...). A constant of any spelling is
        not: splats joined, padded or sliced make any piecewise-constant table, and a table
        indexed by data is priced as a lookup whatever built it."""
        if v in self.raw_memo:
            return self.raw_memo[v]
        owner = v.owner
        if isinstance(owner, self.ir.Block):
            parent = operation(owner.owner)
            if parent.name == "func.func":
                out = self.arg_ctx.get(v, (True, False))[1]
            else:  # a loop carry passed through unchanged is what the loop started with
                j = passed_through(parent, owner, v, self.ir)
                out = j is not None and self.raw(parent.operands[j], depth + 1)
        elif depth > 64:
            return False
        else:
            op = operation(owner)
            data = LAYOUT_DATA_OPERANDS.get(op.name, ())
            operands = list(op.operands)
            if data == ():
                out = False
            else:
                picked = operands if data is None else [operands[i] for i in data
                                                         if i < len(operands)]
                out = all(self.raw(x, depth + 1) for x in picked)
        self.raw_memo[v] = out
        return out

    # -- branches and calls -----------------------------------------------------------------

    def branches(self, op: Any, w: Work) -> None:
        best: Work | None = None
        most_bytes = 0.0
        for region in op.regions:
            bw = Work()
            for block in region.blocks:
                bw.add(self.block_work(block))
            w.add_static(bw)
            most_bytes = max(most_bytes, bw.bytes)
            if best is None or bw.flops > best.flops:
                best = bw
        w.bytes += most_bytes
        if best is not None and best.flops:
            w.flops += best.flops
            w.ops.update(best.ops)

    def func_call(self, op: Any, w: Work) -> None:
        self.call(w, symbol_ref(op, "callee"), op.operands)

    def composite(self, op: Any, w: Work) -> None:
        self.call(w, symbol_ref(op, "decomposition"), op.operands)
        w.add_static(self.regions_static(op))


# Op name -> its handler, called as ``handler(analyzer, op, work)``: the ops that nest others
# (calls, loops, branches) and the priced ops of `pricing.OP_PRICES`.
_HANDLERS = {
    "func.call": _Analyzer.func_call,
    "stablehlo.composite": _Analyzer.composite,
    "stablehlo.while": while_op,
    "stablehlo.case": _Analyzer.branches,
    "stablehlo.if": _Analyzer.branches,
    **OP_PRICES,
}


def _clean(c: Counter) -> dict:
    return {k: v for k, v in sorted(c.items()) if v}


def analyze(module_text: str, platform: str, *, kernel_prefix: str = "jaxbench_kernel") -> ModuleReport:
    """Parse exported StableHLO `module_text` and count its kernels and the work outside them.

    `platform` is the platform the module was exported for (``tpu``, ``cuda`` or ``cpu``); it
    decides which custom calls are kernels. Raises ValueError if the text does not parse or has
    no ``@main``.
    """
    if platform not in KERNEL_TARGETS:
        raise ValueError(f"unknown platform {platform!r}; expected one of {sorted(KERNEL_TARGETS)}")
    try:
        ctx, module, ir = parse_module(module_text)
    except Exception as e:  # MLIRError and friends: report without echoing the (large) text
        msg = str(e).splitlines()[0][:500] if str(e) else type(e).__name__
        raise ValueError(f"module does not parse: {msg}") from None
    with ctx:
        an = _Analyzer(module, ir, platform, kernel_prefix)
        if "main" not in an.funcs:
            raise ValueError("module has no @main function")
        try:
            main = an.func_work("main")
            regions = []
            for name, fn in an.funcs.items():
                if not an.is_region(name) or name == "main":
                    continue
                rw = an.func_work(name) or Work()
                ins, outs = func_signature(fn, ir)
                regions.append(RegionInfo(
                    name=name, arg_types=ins, result_types=outs, kernel_calls=rw.kernel_calls,
                    flops=rw.flops, ops=_clean(rw.ops), heavy=_clean(rw.heavy),
                    call_sites=main.region_calls.get(name, 0) if main else 0,
                ))
            signature = func_signature(an.funcs["main"], ir)
        except RecursionError:
            raise ValueError("module nests too deeply to analyse") from None
    main = main or Work()
    return ModuleReport(
        platform=platform,
        kernel_calls=main.kernel_calls,
        custom_call_targets=_clean(main.targets),
        outside_flops=main.flops,
        outside_ops=_clean(main.ops),
        heavy=_clean(main.heavy),
        kernel_regions=regions,
        outside_op_counts=_clean(main.op_counts),
        outside_op_list=list(main.op_list),
        main_signature=signature,
        kernel_calls_outside_regions=main.kernel_calls_outside_regions,
        outside_bytes=main.bytes,
    )
