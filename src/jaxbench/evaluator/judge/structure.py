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
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

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

# Custom calls that do no work: sharding annotations, shape checks, buffer allocation.
FREE_CUSTOM_CALL_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
    "shape_assertion", "AllocateBuffer",
})

# Data movement and bookkeeping: free outside kernels. (Constants and the indexed ops, gather,
# dynamic_slice, dynamic_update_slice, have rules of their own: see `_Analyzer.lookup`.)
FREE_OPS = frozenset({
    "stablehlo.reshape", "stablehlo.transpose", "stablehlo.slice",
    "stablehlo.pad", "stablehlo.convert", "stablehlo.bitcast_convert",
    "stablehlo.broadcast_in_dim", "stablehlo.broadcast", "stablehlo.concatenate", "stablehlo.iota",
    "stablehlo.return", "func.return", "stablehlo.get_tuple_element",
    "stablehlo.tuple", "stablehlo.optimization_barrier", "stablehlo.reverse",
    # Beyond the list above: shape-polymorphic forms of the same glue, tokens, ids, constants.
    "stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_reshape", "stablehlo.dynamic_iota",
    "stablehlo.dynamic_pad", "stablehlo.get_dimension_size",
    "stablehlo.set_dimension_size", "stablehlo.after_all", "stablehlo.create_token",
    "stablehlo.partition_id", "stablehlo.replica_id", "chlo.constant_like",
    # Shardy annotations (the ops with a body are walked through, see _TRANSPARENT_OPS).
    "sdy.sharding_constraint", "sdy.reshard", "sdy.return", "sdy.propagation_barrier",
    "sdy.sharding_group",
})

# A lookup: an indexed read or write whose position depends on data. A gather from a table is
# any function of its index (a table of squares, of sums with carry...), so it is priced as the
# work it can stand for: an index computation and a load, two FLOPs per element it moves (more
# than the one FLOP of the elementwise op it most often replaces). Reads of the task's own
# inputs (a function argument of @main through layout glue) stay free: they can only move data.
LOOKUP_FLOPS_PER_ELEMENT = 2.0
# Indexed reads: op name -> how many leading operands are the table (the rest are indices, or
# for dynamic_gather the slice sizes, which are indices too as far as taint goes).
_READ_LOOKUPS = {"stablehlo.gather": 1, "stablehlo.dynamic_gather": 1, "stablehlo.dynamic_slice": 1,
                 "stablehlo.real_dynamic_slice": 1}
# A non-splat constant costs this per element: a table computed when the module was made (a
# precomputed answer for the fixed shapes, a table of squares) stands for at least one op per
# entry. Splats and scalars are free.
CONSTANT_FLOPS_PER_ELEMENT = 1.0
# Ops through which a table stays the task's raw input (data movement only): op -> the operand
# positions that carry the data (None: all of them).
_LAYOUT_DATA_OPERANDS: dict[str, tuple[int, ...] | None] = {
    "stablehlo.reshape": (0,), "stablehlo.transpose": (0,), "stablehlo.slice": (0,),
    "stablehlo.broadcast_in_dim": (0,), "stablehlo.broadcast": (0,), "stablehlo.convert": (0,),
    "stablehlo.bitcast_convert": (0,), "stablehlo.reverse": (0,), "stablehlo.concatenate": None,
    "stablehlo.pad": (0, 1), "stablehlo.dynamic_pad": (0, 1), "stablehlo.dynamic_slice": (0,),
    "stablehlo.real_dynamic_slice": (0,), "stablehlo.gather": (0,), "stablehlo.dynamic_gather": (0,),
    "stablehlo.dynamic_reshape": (0,), "stablehlo.dynamic_broadcast_in_dim": (0,),
}
_LONG_ATTR = 200  # attribute texts longer than this are compared by digest in outside_op_list

# Ops whose regions run once, in line: their body is counted as if it were not nested.
_TRANSPARENT_OPS = frozenset({"sdy.manual_computation", "sdy.named_computation"})

_ELEMENTWISE_STABLEHLO = (
    "abs add and atan2 cbrt ceil clamp compare complex cosine count_leading_zeros divide exponential "
    "exponential_minus_one floor imag is_finite log log_plus_one logistic maximum minimum multiply "
    "negate not or popcnt power real reduce_precision remainder round_nearest_afz round_nearest_even "
    "rsqrt select shift_left shift_right_arithmetic shift_right_logical sign sine sqrt subtract tan "
    "tanh xor uniform_quantize uniform_dequantize"
)
_ELEMENTWISE_CHLO = (
    "_asin_acos_kernel acos acosh asin asinh atan atanh bessel_i1e conj cosh digamma erf erf_inv erfc "
    "is_inf is_neg_inf is_pos_inf lgamma mulhi next_after polygamma sinh square tan zeta "
    "broadcast_add broadcast_and broadcast_atan2 broadcast_compare broadcast_complex broadcast_divide "
    "broadcast_maximum broadcast_minimum broadcast_multiply broadcast_next_after broadcast_or "
    "broadcast_polygamma broadcast_power broadcast_remainder broadcast_select broadcast_shift_left "
    "broadcast_shift_right_arithmetic broadcast_shift_right_logical broadcast_subtract broadcast_xor "
    "broadcast_zeta"
)
ELEMENTWISE_OPS = frozenset(
    [f"stablehlo.{n}" for n in _ELEMENTWISE_STABLEHLO.split()]
    + [f"chlo.{n}" for n in _ELEMENTWISE_CHLO.split()]
)

# FLOPs per element when an operand is complex (a complex add is two real adds, a multiply six).
_COMPLEX_WEIGHTS = {"multiply": 6.0, "divide": 11.0, "real": 1.0, "imag": 1.0, "complex": 1.0, "conj": 1.0}
_COMPLEX_DEFAULT_WEIGHT = 2.0
# A complex multiply-accumulate is four real ones.
_COMPLEX_CONTRACTION_WEIGHT = 4.0

WHILE_HEAVY = "stablehlo.while"  # the heavy key of a loop whose trip count is unknown
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


# ---------------------------------------------------------------------------------------------
# MLIR access, kept in a few guarded helpers.


def _mlir() -> tuple[Any, Any]:
    try:
        from jax._src.interpreters import mlir as jmlir
        from jax._src.lib.mlir import ir
    except ImportError:  # pragma: no cover - layout of other JAX versions
        from jax.interpreters import mlir as jmlir
        from jaxlib.mlir import ir
    return jmlir, ir


def _parse(module_text: str) -> tuple[Any, Any, Any]:
    jmlir, ir = _mlir()
    ctx = jmlir.make_ir_context()
    try:
        ctx.allow_unregistered_dialects = True  # unknown ops are reported as heavy, not rejected
    except AttributeError:  # pragma: no cover
        pass
    with ctx:
        module = ir.Module.parse(module_text, context=ctx)
    return ctx, module, ir


def _op(x: Any) -> Any:
    return getattr(x, "operation", x)


def _attr(op: Any, name: str) -> Any | None:
    try:
        attrs = op.attributes
        return attrs[name] if name in attrs else None
    except (KeyError, ValueError, IndexError):
        return None


def _str_attr(op: Any, name: str) -> str | None:
    a = _attr(op, name)
    if a is None:
        return None
    try:
        _, ir = _mlir()
        return ir.StringAttr(a).value
    except Exception:
        s = str(a)
        return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def _symbol_ref(op: Any, name: str) -> str | None:
    a = _attr(op, name)
    if a is None:
        return None
    try:
        _, ir = _mlir()
        return ir.FlatSymbolRefAttr(a).value
    except Exception:
        s = str(a).lstrip("@")
        return s.strip('"')


def _ints(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"-?\d+", text)]


def _int_list(attr: Any) -> list[int]:
    """The integers of an attribute: ``array<i64: 2, 2>``, ``dense<[1, 2]> : tensor<2xi64>``, ``0 : i64``."""
    if attr is None:
        return []
    s = str(attr)
    m = re.fullmatch(r"array<[^:>]*:?(.*)>", s, flags=re.S)
    return _ints(m.group(1) if m else s.split(":")[0])


# ---------------------------------------------------------------------------------------------
# Types, read from their printed form (stable across MLIR versions).

_DIMS_RE = re.compile(r"((?:(?:\d+|\?)x)*)")


class _TT:
    """A tensor type: its shape (None where dynamic) and element type."""

    __slots__ = ("shape", "elem")

    def __init__(self, shape: tuple[int | None, ...], elem: str):
        self.shape = shape
        self.elem = elem

    @property
    def static(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def size(self) -> int | None:
        return math.prod(self.shape) if self.static else None  # type: ignore[arg-type]

    @property
    def is_complex(self) -> bool:
        return self.elem.startswith("complex<")


_TYPE_CACHE: dict[str, _TT | None] = {}


def _tensor_type(t: Any) -> _TT | None:
    s = str(t)
    if s in _TYPE_CACHE:
        return _TYPE_CACHE[s]
    tt = None
    if s.startswith("tensor<") and s.endswith(">") and not s.startswith("tensor<*"):
        body = s[len("tensor<"):-1]
        dims = _DIMS_RE.match(body).group(1)  # type: ignore[union-attr]
        elem = body[len(dims):].split(",")[0].strip()
        shape = tuple(None if d == "?" else int(d) for d in dims.split("x")[:-1])
        tt = _TT(shape, elem)
    if len(_TYPE_CACHE) < 4096:
        _TYPE_CACHE[s] = tt
    return tt


def _size(v: Any) -> int | None:
    """Elements of value `v` (0 for tokens and other non-tensors, None when dynamic or unranked)."""
    s = str(v.type)
    if not s.startswith("tensor<"):
        return 0
    tt = _tensor_type(s)
    return None if tt is None else tt.size


def _is_complex(v: Any) -> bool:
    tt = _tensor_type(v.type)
    return tt is not None and tt.is_complex


# ---------------------------------------------------------------------------------------------
# Work accounting.


@dataclass
class _Work:
    flops: float = 0.0
    ops: Counter = field(default_factory=Counter)  # op name -> flops
    heavy: Counter = field(default_factory=Counter)
    kernel_calls: int = 0
    kernel_calls_outside_regions: int = 0
    targets: Counter = field(default_factory=Counter)
    op_counts: Counter = field(default_factory=Counter)
    region_calls: Counter = field(default_factory=Counter)
    op_list: list = field(default_factory=list)  # canonical op strings, in order

    def add_flops(self, name: str, flops: float) -> None:
        if flops:
            self.flops += flops
            self.ops[name] += flops

    def add_static(self, other: _Work) -> None:
        """Everything but the FLOPs: what is counted once however often it runs."""
        self.heavy.update(other.heavy)
        self.kernel_calls += other.kernel_calls
        self.kernel_calls_outside_regions += other.kernel_calls_outside_regions
        self.targets.update(other.targets)
        self.op_counts.update(other.op_counts)
        self.region_calls.update(other.region_calls)
        self.op_list.extend(other.op_list)

    def add(self, other: _Work, scale: float = 1.0) -> None:
        self.add_static(other)
        if other.flops and scale:
            self.flops += other.flops * scale
            for k, v in other.ops.items():
                self.ops[k] += v * scale


class _Analyzer:
    def __init__(self, module: Any, ir: Any, platform: str, kernel_prefix: str):
        self.ir = ir
        self.platform = platform
        self.kernel_prefix = kernel_prefix
        self.kernel_targets = KERNEL_TARGETS[platform]
        self.funcs: dict[str, Any] = {}
        for op in module.body.operations:
            op = _op(op)
            if op.name == "func.func":
                name = _str_attr(op, "sym_name")
                if name is not None:
                    self.funcs[name] = op
        # (function, its arguments' (depends on data, is raw input)) -> its work
        self.memo: dict[tuple[str, tuple[tuple[bool, bool], ...]], _Work] = {}
        self.active: set[str] = set()  # functions being evaluated (a call to one is recursive)
        self.arg_ctx: dict[Any, tuple[bool, bool]] = {}  # function argument -> its call's context
        self.taint: dict[Any, bool] = {}  # value -> whether it depends on data (see `tainted`)
        self.raw_memo: dict[Any, bool] = {}  # value -> whether it is the task's input, moved

    # -- functions ------------------------------------------------------------------------

    def is_region(self, name: str) -> bool:
        return is_kernel_region_name(name, self.kernel_prefix)

    def func_work(self, name: str, ctx: tuple[tuple[bool, bool], ...] | None = None
                  ) -> _Work | None:
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
            w = _Work()
            for block in blocks:
                w.add(self.block_work(block))
        finally:
            self.active.discard(name)
            self.raw_memo.clear()
        self.memo[key] = w
        return w

    def call(self, w: _Work, callee: str | None, operands: Any = ()) -> None:
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
            for k, v in cw.ops.items():
                w.ops[k] += v
            return
        w.add(cw)

    # -- blocks and ops ---------------------------------------------------------------------

    def block_work(self, block: Any, skip: frozenset[int] = frozenset()) -> _Work:
        w = _Work()
        w.op_list.append(f"^bb({', '.join(str(a.type) for a in block.arguments)})")
        for i, op in enumerate(block.operations):
            self.op_work(_op(op), w, count_flops=i not in skip)
        w.op_list.append("^end")
        return w

    def regions_static(self, op: Any) -> _Work:
        """Static counts of the ops nested in `op` (reducer bodies, comparators): no FLOPs."""
        w = _Work()
        for region in op.regions:
            for block in region.blocks:
                w.add_static(self.block_work(block))
        return w

    def op_work(self, op: Any, w: _Work, count_flops: bool = True) -> None:
        name = op.name
        w.op_counts[name] += 1
        w.op_list.append(_canonical(op, self.inlined_symbol(op, name)))
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
        callee = _symbol_ref(op, attr)
        if callee is None or callee not in self.funcs or self.is_region(callee):
            return None
        return attr

    def priced_op(self, op: Any, name: str, w: _Work, count_flops: bool) -> None:
        if name in FREE_OPS:
            return
        if name in ELEMENTWISE_OPS:
            self.elementwise(op, name, w, count_flops)
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
        elif name == "func.call" and self.is_region(_symbol_ref(op, "callee") or ""):
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
                    inner = _op(inner)
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
            parent = _op(owner.owner)
            if parent.name == "func.func":
                return self.arg_ctx.get(v, (True, False))[0]
            if parent.name == "stablehlo.while":
                return True  # a loop carry `while_op` did not clear
            # reducer, comparator and in-line region arguments: elements of the op's operands
            return any(self.tainted(x) for x in parent.operands)
        return True  # not walked (yet): assume the worst

    def raw(self, v: Any, depth: int = 0) -> bool:
        """Whether `v` is the task's input data, only moved: an argument of @main, or a splat,
        through layout ops (reshape, slice, convert, concatenate, gather...)."""
        if v in self.raw_memo:
            return self.raw_memo[v]
        owner = v.owner
        if isinstance(owner, self.ir.Block):
            parent = _op(owner.owner)
            if parent.name == "func.func":
                out = self.arg_ctx.get(v, (True, False))[1]
            else:  # a loop carry passed through unchanged is what the loop started with
                j = self.passed_through(parent, owner, v)
                out = j is not None and self.raw(parent.operands[j], depth + 1)
        elif depth > 64:
            return False
        else:
            op = _op(owner)
            data = _LAYOUT_DATA_OPERANDS.get(op.name, ())
            operands = list(op.operands)
            if op.name == "stablehlo.constant":
                out = _constant_cost(op) == 0
            elif data == ():
                out = False
            else:
                picked = operands if data is None else [operands[i] for i in data
                                                         if i < len(operands)]
                out = all(self.raw(x, depth + 1) for x in picked)
        self.raw_memo[v] = out
        return out

    def elementwise(self, op: Any, name: str, w: _Work, count_flops: bool) -> None:
        n = 0
        for r in op.results:
            s = _size(r)
            if s is None:
                w.heavy[f"{name} (dynamic shape)"] += 1
                return
            n += s
        weight = 1.0
        if any(_is_complex(v) for v in op.operands):
            base = name.split(".", 1)[1].removeprefix("broadcast_")
            weight = _COMPLEX_WEIGHTS.get(base, _COMPLEX_DEFAULT_WEIGHT)
        if count_flops:
            w.add_flops(name, weight * n)

    def dynamic(self, w: _Work, name: str) -> None:
        w.heavy[f"{name} (dynamic shape)"] += 1

    # -- loops ------------------------------------------------------------------------------

    def const_int(self, v: Any, depth: int = 0) -> int | None:
        """The value of `v` if it is a scalar integer known when the module is compiled: a
        ``stablehlo.constant``, ``get_dimension_size`` of a static dimension (JAX 0.12's
        ``cumsum`` loops run to it), or an integer ``convert`` of either that keeps the value."""
        owner = v.owner
        if isinstance(owner, self.ir.Block) or depth > 8:
            return None
        owner = _op(owner)
        tt = _tensor_type(v.type)
        m = re.fullmatch(r"([su]?)i(\d+)", tt.elem) if tt is not None and tt.shape == () else None
        if m is None:
            return None
        if owner.name in ("stablehlo.constant", "arith.constant"):
            value = re.match(r"dense<(-?\d+)>", str(_attr(owner, "value")))
            return int(value.group(1)) if value else None
        if owner.name == "stablehlo.get_dimension_size" and len(owner.operands) == 1:
            source = _tensor_type(owner.operands[0].type)
            dim = re.match(r"\s*(\d+)", str(_attr(owner, "dimension")))  # "0 : i64"
            if source is None or dim is None or int(dim.group(1)) >= len(source.shape):
                return None
            n = source.shape[int(dim.group(1))]
            return n if isinstance(n, int) else None
        if owner.name == "stablehlo.convert" and len(owner.operands) == 1:
            n = self.const_int(owner.operands[0], depth + 1)
            bits = int(m.group(2))
            low, high = (0, 2**bits - 1) if m.group(1) == "u" else (-2**(bits - 1), 2**(bits - 1) - 1)
            return n if n is not None and low <= n <= high else None
        return None

    def block_arg_index(self, v: Any, block: Any) -> int | None:
        owner = v.owner
        if not isinstance(owner, self.ir.Block) or owner != block:
            return None
        for i, a in enumerate(block.arguments):
            if a == v:
                return i
        return None

    @staticmethod
    def index_in_block(op: Any, block: Any) -> int | None:
        for i, o in enumerate(block.operations):
            if _op(o) == op:
                return i
        return None

    def trip_count(self, op: Any) -> tuple[int, int, int, int] | None:
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
        cops = [_op(o) for o in cond.operations]
        bops = [_op(o) for o in body.operations]
        if not cops or not bops or cops[-1].name != "stablehlo.return" or len(cops[-1].operands) != 1:
            return None
        pred = cops[-1].operands[0]
        if isinstance(pred.owner, self.ir.Block):
            return None
        cmp = _op(pred.owner)
        if cmp.name != "stablehlo.compare" or len(cmp.operands) != 2:
            return None
        direction = re.search(r"comparison_direction\s+(\w+)", str(_attr(cmp, "comparison_direction")))
        ctype = str(_attr(cmp, "compare_type") or "")
        if direction is None or "FLOAT" in ctype:
            return None
        a, b = cmp.operands
        if direction.group(1) == "LT":
            counter, bound = a, b
        elif direction.group(1) == "GT":
            counter, bound = b, a
        else:
            return None
        k = self.block_arg_index(counter, cond)
        if k is None:
            return None
        n = self.const_int(bound)
        if n is None:  # the bound carried as a loop argument, passed through unchanged
            j = self.block_arg_index(bound, cond)
            if j is None or j == k or j >= len(op.operands):
                return None
            ret = bops[-1]
            if ret.name != "stablehlo.return" or self.block_arg_index(ret.operands[j], body) != j:
                return None
            n = self.const_int(op.operands[j])
            if n is None:
                return None
        if k >= len(op.operands):
            return None
        start = self.const_int(op.operands[k])
        if start is None or ("UNSIGNED" in ctype and min(start, n) < 0):
            return None
        ret = bops[-1]
        if ret.name != "stablehlo.return" or k >= len(ret.operands):
            return None
        nxt = ret.operands[k]
        if isinstance(nxt.owner, self.ir.Block):
            return None
        inc = _op(nxt.owner)
        if inc.name != "stablehlo.add" or len(inc.operands) != 2:
            return None
        x, y = inc.operands
        if self.block_arg_index(x, body) == k:
            step = self.const_int(y)
        elif self.block_arg_index(y, body) == k:
            step = self.const_int(x)
        else:
            return None
        if step is None or step <= 0:
            return None
        ci = self.index_in_block(cmp, cond)
        bi = self.index_in_block(inc, body)
        if ci is None or bi is None:
            return None
        return max(0, -(-(n - start) // step)), ci, bi, k

    def passed_through(self, op: Any, block: Any, v: Any) -> int | None:
        """j if `v` is argument j of a block of while `op` and the body returns it unchanged."""
        if op.name != "stablehlo.while" or len(op.regions) != 2 or \
                len(op.regions[1].blocks) != 1:
            return None
        j = self.block_arg_index(v, block)
        body = op.regions[1].blocks[0]
        ops = [_op(o) for o in body.operations]
        if j is None or j >= len(op.operands) or not ops or ops[-1].name != "stablehlo.return" \
                or j >= len(ops[-1].operands):
            return None
        return j if self.block_arg_index(ops[-1].operands[j], body) == j else None

    def clear_carries(self, op: Any, counter: int | None) -> None:
        """Mark the loop's block arguments: the counter of a known trip count, and a carry that
        starts free of data and that the body passes through unchanged, depend on no data."""
        regions = list(op.regions)
        ret = None
        if len(regions) == 2 and len(regions[1].blocks) == 1:
            ops = [_op(o) for o in regions[1].blocks[0].operations]
            ret = ops[-1] if ops and ops[-1].name == "stablehlo.return" else None
        for region in regions:
            for block in region.blocks:
                for j, arg in enumerate(block.arguments):
                    clean = j == counter or (
                        j < len(op.operands) and not self.tainted(op.operands[j])
                        and ret is not None and j < len(ret.operands)
                        and self.block_arg_index(ret.operands[j], regions[1].blocks[0]) == j)
                    self.taint[arg] = not clean

    def while_op(self, op: Any, w: _Work) -> None:
        tc = self.trip_count(op)
        self.clear_carries(op, None if tc is None else tc[3])
        if tc is not None:
            trips, ci, bi, _ = tc
            cond_w = self.block_work(op.regions[0].blocks[0], skip=frozenset({ci}))
            body_w = self.block_work(op.regions[1].blocks[0], skip=frozenset({bi}))
            w.add(cond_w, scale=trips + 1)
            w.add(body_w, scale=trips)
            return
        inner = _Work()
        for region in op.regions:
            for block in region.blocks:
                inner.add(self.block_work(block))
        w.add_static(inner)
        # Heavy whatever its body: a loop of free ops (lookups, copies) with a trip count
        # nobody can read would hold the runner until its timeout.
        w.heavy[WHILE_HEAVY] += 1

    def branches(self, op: Any, w: _Work) -> None:
        best: _Work | None = None
        for region in op.regions:
            bw = _Work()
            for block in region.blocks:
                bw.add(self.block_work(block))
            w.add_static(bw)
            if best is None or bw.flops > best.flops:
                best = bw
        if best is not None and best.flops:
            w.flops += best.flops
            w.ops.update(best.ops)

    # -- calls ------------------------------------------------------------------------------

    def custom_call(self, op: Any, w: _Work) -> None:
        target = _str_attr(op, "call_target_name") or ""
        w.targets[target] += 1
        if target in self.kernel_targets:
            w.kernel_calls += 1
            w.kernel_calls_outside_regions += 1  # not passed on when a kernel region is called
        elif target not in FREE_CUSTOM_CALL_TARGETS:
            w.heavy[f"custom_call:{target}"] += 1

    def func_call(self, op: Any, w: _Work) -> None:
        self.call(w, _symbol_ref(op, "callee"), op.operands)

    def composite(self, op: Any, w: _Work) -> None:
        self.call(w, _symbol_ref(op, "decomposition"), op.operands)
        w.add_static(self.regions_static(op))

    # -- priced ops -------------------------------------------------------------------------

    def dot_general(self, op: Any, w: _Work) -> None:
        name = op.name
        lhs = _tensor_type(op.operands[0].type)
        out = _size(op.results[0])
        if lhs is None or not lhs.static or out is None:
            return self.dynamic(w, name)
        if name == "stablehlo.dot":
            cdims = [max(len(lhs.shape) - 1, 0)] if lhs.shape else []
        else:
            dn = str(_attr(op, "dot_dimension_numbers"))
            m = re.search(r"lhs_contracting_dimensions\s*=\s*\[([^\]]*)\]", dn)
            cdims = _ints(m.group(1)) if m else []
        k = math.prod(lhs.shape[d] for d in cdims if 0 <= d < len(lhs.shape))  # type: ignore[misc]
        weight = _COMPLEX_CONTRACTION_WEIGHT if lhs.is_complex else 1.0
        w.add_flops(name, 2.0 * out * k * weight)

    def convolution(self, op: Any, w: _Work) -> None:
        name = op.name
        rhs = _tensor_type(op.operands[1].type)
        out = _size(op.results[0])
        if rhs is None or not rhs.static or out is None:
            return self.dynamic(w, name)
        dn = str(_attr(op, "dimension_numbers") or _attr(op, "dim_numbers") or "")
        m = re.search(r"\]\s*x\s*\[([^\]]*)\]", dn)
        kernel_dims = [t.strip() for t in m.group(1).split(",")] if m else []
        if "o" not in kernel_dims or len(kernel_dims) != len(rhs.shape):
            w.heavy[f"{name} (unknown layout)"] += 1
            return
        o = rhs.shape[kernel_dims.index("o")] or 1
        weight = _COMPLEX_CONTRACTION_WEIGHT if rhs.is_complex else 1.0
        w.add_flops(name, 2.0 * out * (rhs.size / o) * weight)  # type: ignore[operator]

    def reduce(self, op: Any, w: _Work) -> None:
        ins = list(op.operands)[: len(op.operands) // 2]
        sizes = [_size(v) for v in ins]
        w.add_static(self.regions_static(op))
        if any(s is None for s in sizes):
            return self.dynamic(w, op.name)
        w.add_flops(op.name, float(sum(sizes)))  # type: ignore[arg-type]

    def reduce_window(self, op: Any, w: _Work) -> None:
        w.add_static(self.regions_static(op))
        outs = [_size(r) for r in op.results]
        if any(s is None for s in outs):
            return self.dynamic(w, op.name)
        window = math.prod(_int_list(_attr(op, "window_dimensions")) or [1])
        w.add_flops(op.name, float(sum(outs)) * window)  # type: ignore[arg-type]

    def select_and_scatter(self, op: Any, w: _Work) -> None:
        w.add_static(self.regions_static(op))
        n = _size(op.operands[1])  # the source: one update per window
        if n is None:
            return self.dynamic(w, op.name)
        w.add_flops(op.name, float(n))

    def scatter(self, op: Any, w: _Work) -> None:
        w.add_static(self.regions_static(op))
        nin = (len(op.operands) - 1) // 2
        sizes = [_size(v) for v in list(op.operands)[nin + 1:]]
        if any(s is None for s in sizes):
            return self.dynamic(w, op.name)
        per_element = 1.0  # the combiner
        if self.tainted(op.operands[nin]):  # and a write to positions that depend on data
            per_element += LOOKUP_FLOPS_PER_ELEMENT
        w.add_flops(op.name, per_element * sum(sizes))  # type: ignore[arg-type]

    def lookup(self, op: Any, w: _Work) -> None:
        """gather, dynamic_slice & co. (reads) and dynamic_update_slice (a write): free when the
        position depends on no data (static glue) or a read only moves the task's inputs; else
        LOOKUP_FLOPS_PER_ELEMENT per element read or written."""
        name, operands = op.name, list(op.operands)
        if name == "stablehlo.dynamic_update_slice":
            indices, moved, tables = operands[2:], operands[1:2], []
        else:
            n_tables = _READ_LOOKUPS[name]
            indices, moved, tables = operands[n_tables:], list(op.results), operands[:n_tables]
        if not any(self.tainted(v) for v in indices):
            return
        if tables and all(self.raw(t) for t in tables):
            return
        sizes = [_size(v) for v in moved]
        if any(s is None for s in sizes):
            return self.dynamic(w, name)
        w.add_flops(name, LOOKUP_FLOPS_PER_ELEMENT * sum(sizes))  # type: ignore[arg-type]

    def constant(self, op: Any, w: _Work) -> None:
        w.add_flops(op.name, CONSTANT_FLOPS_PER_ELEMENT * _constant_cost(op))

    def sort(self, op: Any, w: _Work) -> None:
        w.add_static(self.regions_static(op))
        dim = (_int_list(_attr(op, "dimension")) or [-1])[0]
        total = 0.0
        for v in op.operands:
            tt = _tensor_type(v.type)
            if tt is None or not tt.static:
                return self.dynamic(w, op.name)
            if not tt.shape:
                continue
            n = tt.shape[dim]
            total += tt.size * math.log2(n) if n and n > 1 else 0.0  # type: ignore[operator]
        w.add_flops(op.name, total)

    def fft(self, op: Any, w: _Work) -> None:
        tt = _tensor_type(op.operands[0].type)
        if tt is None or not tt.static:
            return self.dynamic(w, op.name)
        lengths = _int_list(_attr(op, "fft_length"))
        n = math.prod(lengths) if lengths else 1
        batch = math.prod(tt.shape[: len(tt.shape) - len(lengths)])  # type: ignore[arg-type]
        if n > 1:
            w.add_flops(op.name, batch * 5.0 * n * math.log2(n))

    def triangular_solve(self, op: Any, w: _Work) -> None:
        a = _tensor_type(op.operands[0].type)
        b = _size(op.operands[1])
        if a is None or not a.static or b is None or not a.shape:
            return self.dynamic(w, op.name)
        m = a.shape[-1]
        w.add_flops(op.name, float(m) * b)  # batch * m^2 * n, with b holding batch * m * n

    def cholesky(self, op: Any, w: _Work) -> None:
        a = _tensor_type(op.operands[0].type)
        if a is None or not a.static or not a.shape:
            return self.dynamic(w, op.name)
        n = a.shape[-1]
        batch = a.size // (n * n) if n else 0  # type: ignore[operator]
        w.add_flops(op.name, batch * n ** 3 / 3.0)  # type: ignore[operator]


_HANDLERS = {
    "stablehlo.custom_call": _Analyzer.custom_call,
    "func.call": _Analyzer.func_call,
    "stablehlo.composite": _Analyzer.composite,
    "stablehlo.while": _Analyzer.while_op,
    "stablehlo.case": _Analyzer.branches,
    "stablehlo.if": _Analyzer.branches,
    "stablehlo.dot_general": _Analyzer.dot_general,
    "stablehlo.dot": _Analyzer.dot_general,
    "stablehlo.convolution": _Analyzer.convolution,
    "stablehlo.reduce": _Analyzer.reduce,
    "stablehlo.reduce_window": _Analyzer.reduce_window,
    "stablehlo.select_and_scatter": _Analyzer.select_and_scatter,
    "stablehlo.scatter": _Analyzer.scatter,
    "stablehlo.gather": _Analyzer.lookup,
    "stablehlo.dynamic_gather": _Analyzer.lookup,
    "stablehlo.dynamic_slice": _Analyzer.lookup,
    "stablehlo.real_dynamic_slice": _Analyzer.lookup,
    "stablehlo.dynamic_update_slice": _Analyzer.lookup,
    "stablehlo.constant": _Analyzer.constant,
    "chlo.constant": _Analyzer.constant,
    "stablehlo.sort": _Analyzer.sort,
    "stablehlo.fft": _Analyzer.fft,
    "stablehlo.triangular_solve": _Analyzer.triangular_solve,
    "stablehlo.cholesky": _Analyzer.cholesky,
}


def _constant_cost(op: Any) -> int:
    """Elements of a constant that is not a splat (0 for splats and scalars). A constant whose
    attribute is not a readable dense one (``dense_resource``...) counts in full."""
    n = _size(op.results[0]) if op.results else 0
    if not n or n <= 1:
        return 0
    try:
        _, ir = _mlir()
        if ir.DenseElementsAttr(_attr(op, "value")).is_splat:
            return 0
    except Exception:  # noqa: BLE001 - not a dense elements attribute: priced
        pass
    return n


def _attr_text(a: Any) -> str:
    s = str(a)
    if len(s) > _LONG_ATTR:  # a large constant: its digest, not megabytes of hex in the report
        s = f"{s[:60]}...<{len(s)} chars, sha256 {hashlib.sha256(s.encode()).hexdigest()[:32]}>"
    return s


def _canonical(op: Any, inlined: str | None = None) -> str:
    """Op name, operand types, result types and attributes (sorted by name): what two exports of
    one trace must agree on op for op. SSA names and locations are left out (they differ), and
    so is the value of attribute `inlined`, a callee whose body the list holds after the call."""
    try:
        attrs = op.attributes
        named = sorted((attrs[i].name, "<body follows>" if attrs[i].name == inlined
                        else _attr_text(attrs[i].attr)) for i in range(len(attrs)))
    except Exception:  # noqa: BLE001 - unreadable attributes: name the op only
        named = [("?", "unreadable")]
    ins = ", ".join(str(v.type) for v in op.operands)
    outs = ", ".join(str(v.type) for v in op.results)
    body = ", ".join(f"{k} = {v}" for k, v in named)
    return f"{op.name}({ins}) -> ({outs}) {{{body}}}"


def _signature(fn: Any, ir: Any) -> tuple[list[str], list[str]]:
    try:
        ft = ir.FunctionType(ir.TypeAttr(_attr(fn, "function_type")).value)
        return [str(t) for t in ft.inputs], [str(t) for t in ft.results]
    except Exception:  # pragma: no cover - fall back on the body
        block = fn.regions[0].blocks[0]
        ins = [str(a.type) for a in block.arguments]
        outs: list[str] = []
        for o in block.operations:
            o = _op(o)
            if o.name == "func.return":
                outs = [str(v.type) for v in o.operands]
        return ins, outs


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
        ctx, module, ir = _parse(module_text)
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
                rw = an.func_work(name) or _Work()
                ins, outs = _signature(fn, ir)
                regions.append(RegionInfo(
                    name=name, arg_types=ins, result_types=outs, kernel_calls=rw.kernel_calls,
                    flops=rw.flops, ops=_clean(rw.ops), heavy=_clean(rw.heavy),
                    call_sites=main.region_calls.get(name, 0) if main else 0,
                ))
            signature = _signature(an.funcs["main"], ir)
        except RecursionError:
            raise ValueError("module nests too deeply to analyse") from None
    main = main or _Work()
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
    )
