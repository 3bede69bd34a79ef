"""What an op outside the kernels costs: the free ops and custom calls, the elementwise ops, the
weights of lookups, constants and complex arithmetic, the work record (`Work`) the analysis
fills, and the cost function of each priced op (`OP_PRICES`).

The cost functions take the walker of :mod:`.structure` (see `Walker`) for what they cannot
read off the op alone: whether a value depends on data, whether it is the task's raw input,
the static counts of the ops nested in an op, and the platform's kernel targets.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from jaxbench.evaluator.judge.mlir import (
    element_count,
    get_attr,
    int_list,
    ints,
    is_complex_value,
    mlir_bindings,
    str_attr,
    tensor_type,
)

__all__ = [
    "CONSTANT_FLOPS_PER_ELEMENT",
    "ELEMENTWISE_OPS",
    "FREE_CUSTOM_CALL_TARGETS",
    "FREE_OPS",
    "LAYOUT_DATA_OPERANDS",
    "LOOKUP_FLOPS_PER_ELEMENT",
    "OP_PRICES",
    "READ_LOOKUPS",
    "Walker",
    "Work",
    "constant_cost",
    "elementwise",
    "written_bytes",
]

# Custom calls that do no work: sharding annotations, shape checks, buffer allocation.
FREE_CUSTOM_CALL_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
    "shape_assertion", "AllocateBuffer",
})

# Data movement and bookkeeping: free outside kernels. (Constants and the indexed ops, gather,
# dynamic_slice, dynamic_update_slice, have rules of their own: see `lookup`.)
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
    # Shardy annotations (the ops with a body are walked through, see structure._TRANSPARENT_OPS).
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
READ_LOOKUPS = {"stablehlo.gather": 1, "stablehlo.dynamic_gather": 1, "stablehlo.dynamic_slice": 1,
                "stablehlo.real_dynamic_slice": 1}
# A non-splat constant costs this per element: a table computed when the module was made (a
# precomputed answer for the fixed shapes, a table of squares) stands for at least one op per
# entry. Splats and scalars are free.
CONSTANT_FLOPS_PER_ELEMENT = 1.0
# Ops through which a table stays the task's raw input (data movement only): op -> the operand
# positions that carry the data (None: all of them).
LAYOUT_DATA_OPERANDS: dict[str, tuple[int, ...] | None] = {
    "stablehlo.reshape": (0,), "stablehlo.transpose": (0,), "stablehlo.slice": (0,),
    "stablehlo.broadcast_in_dim": (0,), "stablehlo.broadcast": (0,), "stablehlo.convert": (0,),
    "stablehlo.bitcast_convert": (0,), "stablehlo.reverse": (0,), "stablehlo.concatenate": None,
    "stablehlo.pad": (0, 1), "stablehlo.dynamic_pad": (0, 1), "stablehlo.dynamic_slice": (0,),
    "stablehlo.real_dynamic_slice": (0,), "stablehlo.gather": (0,), "stablehlo.dynamic_gather": (0,),
    "stablehlo.dynamic_reshape": (0,), "stablehlo.dynamic_broadcast_in_dim": (0,),
}

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


# ---------------------------------------------------------------------------------------------
# Work accounting.


@dataclass
class Work:
    flops: float = 0.0
    bytes: float = 0.0  # bytes the ops write (see `written_bytes`), times their loops' trips
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

    def add_static(self, other: Work) -> None:
        """Everything but the FLOPs: what is counted once however often it runs."""
        self.heavy.update(other.heavy)
        self.kernel_calls += other.kernel_calls
        self.kernel_calls_outside_regions += other.kernel_calls_outside_regions
        self.targets.update(other.targets)
        self.op_counts.update(other.op_counts)
        self.region_calls.update(other.region_calls)
        self.op_list.extend(other.op_list)

    def add(self, other: Work, scale: float = 1.0) -> None:
        self.add_static(other)
        self.bytes += other.bytes * scale
        if other.flops and scale:
            self.flops += other.flops * scale
            for k, v in other.ops.items():
                self.ops[k] += v * scale


class Walker(Protocol):
    """What the cost functions ask of the walker (``structure._Analyzer``)."""

    kernel_targets: frozenset[str]

    def regions_static(self, op: Any) -> Work: ...

    def tainted(self, v: Any) -> bool: ...

    def raw(self, v: Any, depth: int = 0) -> bool: ...


# ---------------------------------------------------------------------------------------------
# What an op costs.

# Ops that write no array of their own (a view, a name, a token, a nested op whose body's ops
# are counted instead): no bytes. Every other op outside kernels writes its results.
_NO_BYTES = frozenset({
    "stablehlo.reshape", "stablehlo.bitcast_convert", "stablehlo.get_tuple_element",
    "stablehlo.tuple", "stablehlo.return", "func.return", "stablehlo.optimization_barrier",
    "stablehlo.after_all", "stablehlo.create_token", "stablehlo.partition_id",
    "stablehlo.replica_id", "stablehlo.get_dimension_size", "stablehlo.set_dimension_size",
    "stablehlo.dynamic_reshape", "func.call", "stablehlo.composite", "stablehlo.while",
    "stablehlo.case", "stablehlo.if", "stablehlo.custom_call",
})


def _element_bytes(elem: str) -> float:
    if elem.startswith("complex<"):
        return 2 * _element_bytes(elem[len("complex<"):-1])
    digits = re.findall(r"\d+", elem)
    return max(1, int(digits[0]) // 8) if digits else 4.0


def written_bytes(op: Any) -> float:
    """Bytes an op outside kernels writes (its results; a splat constant none): what the
    data-movement rule counts. Views, names, tokens and nested ops write nothing themselves."""
    name = op.name
    if name in _NO_BYTES or name.startswith("sdy.") or (
            name == "stablehlo.constant" and not constant_cost(op)):
        return 0.0
    total = 0.0
    for r in op.results:
        tt = tensor_type(r.type)
        if tt is not None and tt.static:
            total += float(tt.size) * _element_bytes(tt.elem)  # type: ignore[arg-type]
    return total


def constant_cost(op: Any) -> int:
    """Elements of a constant that is not a splat (0 for splats and scalars). A constant whose
    attribute is not a readable dense one (``dense_resource``...) counts in full."""
    n = element_count(op.results[0]) if op.results else 0
    if not n or n <= 1:
        return 0
    try:
        _, ir = mlir_bindings()
        if ir.DenseElementsAttr(get_attr(op, "value")).is_splat:
            return 0
    except Exception:  # noqa: BLE001 - not a dense elements attribute: priced
        pass
    return n


def elementwise(op: Any, name: str, w: Work, count_flops: bool) -> None:
    n = 0
    for r in op.results:
        s = element_count(r)
        if s is None:
            w.heavy[f"{name} (dynamic shape)"] += 1
            return
        n += s
    weight = 1.0
    if any(is_complex_value(v) for v in op.operands):
        base = name.split(".", 1)[1].removeprefix("broadcast_")
        weight = _COMPLEX_WEIGHTS.get(base, _COMPLEX_DEFAULT_WEIGHT)
    if count_flops:
        w.add_flops(name, weight * n)


def _dynamic(w: Work, name: str) -> None:
    w.heavy[f"{name} (dynamic shape)"] += 1


def custom_call(an: Walker, op: Any, w: Work) -> None:
    target = str_attr(op, "call_target_name") or ""
    w.targets[target] += 1
    if target in an.kernel_targets:
        w.kernel_calls += 1
        w.kernel_calls_outside_regions += 1  # not passed on when a kernel region is called
    elif target not in FREE_CUSTOM_CALL_TARGETS:
        w.heavy[f"custom_call:{target}"] += 1


def dot_general(an: Walker, op: Any, w: Work) -> None:
    name = op.name
    lhs = tensor_type(op.operands[0].type)
    out = element_count(op.results[0])
    if lhs is None or not lhs.static or out is None:
        return _dynamic(w, name)
    if name == "stablehlo.dot":
        cdims = [max(len(lhs.shape) - 1, 0)] if lhs.shape else []
    else:
        dn = str(get_attr(op, "dot_dimension_numbers"))
        m = re.search(r"lhs_contracting_dimensions\s*=\s*\[([^\]]*)\]", dn)
        cdims = ints(m.group(1)) if m else []
    k = math.prod(lhs.shape[d] for d in cdims if 0 <= d < len(lhs.shape))  # type: ignore[misc]
    weight = _COMPLEX_CONTRACTION_WEIGHT if lhs.is_complex else 1.0
    w.add_flops(name, 2.0 * out * k * weight)


def convolution(an: Walker, op: Any, w: Work) -> None:
    name = op.name
    rhs = tensor_type(op.operands[1].type)
    out = element_count(op.results[0])
    if rhs is None or not rhs.static or out is None:
        return _dynamic(w, name)
    dn = str(get_attr(op, "dimension_numbers") or get_attr(op, "dim_numbers") or "")
    m = re.search(r"\]\s*x\s*\[([^\]]*)\]", dn)
    kernel_dims = [t.strip() for t in m.group(1).split(",")] if m else []
    if "o" not in kernel_dims or len(kernel_dims) != len(rhs.shape):
        w.heavy[f"{name} (unknown layout)"] += 1
        return
    o = rhs.shape[kernel_dims.index("o")] or 1
    weight = _COMPLEX_CONTRACTION_WEIGHT if rhs.is_complex else 1.0
    w.add_flops(name, 2.0 * out * (rhs.size / o) * weight)  # type: ignore[operator]


def reduce(an: Walker, op: Any, w: Work) -> None:
    ins = list(op.operands)[: len(op.operands) // 2]
    sizes = [element_count(v) for v in ins]
    w.add_static(an.regions_static(op))
    if any(s is None for s in sizes):
        return _dynamic(w, op.name)
    w.add_flops(op.name, float(sum(sizes)))  # type: ignore[arg-type]


def reduce_window(an: Walker, op: Any, w: Work) -> None:
    w.add_static(an.regions_static(op))
    outs = [element_count(r) for r in op.results]
    if any(s is None for s in outs):
        return _dynamic(w, op.name)
    window = math.prod(int_list(get_attr(op, "window_dimensions")) or [1])
    w.add_flops(op.name, float(sum(outs)) * window)  # type: ignore[arg-type]


def select_and_scatter(an: Walker, op: Any, w: Work) -> None:
    w.add_static(an.regions_static(op))
    n = element_count(op.operands[1])  # the source: one update per window
    if n is None:
        return _dynamic(w, op.name)
    w.add_flops(op.name, float(n))


def scatter(an: Walker, op: Any, w: Work) -> None:
    w.add_static(an.regions_static(op))
    nin = (len(op.operands) - 1) // 2
    sizes = [element_count(v) for v in list(op.operands)[nin + 1:]]
    if any(s is None for s in sizes):
        return _dynamic(w, op.name)
    per_element = 1.0  # the combiner
    if an.tainted(op.operands[nin]):  # and a write to positions that depend on data
        per_element += LOOKUP_FLOPS_PER_ELEMENT
    w.add_flops(op.name, per_element * sum(sizes))  # type: ignore[arg-type]


def lookup(an: Walker, op: Any, w: Work) -> None:
    """gather, dynamic_slice & co. (reads) and dynamic_update_slice (a write): free when the
    position depends on no data (static glue) or a read only moves the task's inputs; else
    LOOKUP_FLOPS_PER_ELEMENT per element read or written."""
    name, operands = op.name, list(op.operands)
    if name == "stablehlo.dynamic_update_slice":
        indices, moved, tables = operands[2:], operands[1:2], []
    else:
        n_tables = READ_LOOKUPS[name]
        indices, moved, tables = operands[n_tables:], list(op.results), operands[:n_tables]
    if not any(an.tainted(v) for v in indices):
        return
    if tables and all(an.raw(t) for t in tables):
        return
    sizes = [element_count(v) for v in moved]
    if any(s is None for s in sizes):
        return _dynamic(w, name)
    w.add_flops(name, LOOKUP_FLOPS_PER_ELEMENT * sum(sizes))  # type: ignore[arg-type]


def constant(an: Walker, op: Any, w: Work) -> None:
    w.add_flops(op.name, CONSTANT_FLOPS_PER_ELEMENT * constant_cost(op))


def sort(an: Walker, op: Any, w: Work) -> None:
    w.add_static(an.regions_static(op))
    dim = (int_list(get_attr(op, "dimension")) or [-1])[0]
    total = 0.0
    for v in op.operands:
        tt = tensor_type(v.type)
        if tt is None or not tt.static:
            return _dynamic(w, op.name)
        if not tt.shape:
            continue
        n = tt.shape[dim]
        total += tt.size * math.log2(n) if n and n > 1 else 0.0  # type: ignore[operator]
    w.add_flops(op.name, total)


def fft(an: Walker, op: Any, w: Work) -> None:
    tt = tensor_type(op.operands[0].type)
    if tt is None or not tt.static:
        return _dynamic(w, op.name)
    lengths = int_list(get_attr(op, "fft_length"))
    n = math.prod(lengths) if lengths else 1
    batch = math.prod(tt.shape[: len(tt.shape) - len(lengths)])  # type: ignore[arg-type]
    if n > 1:
        w.add_flops(op.name, batch * 5.0 * n * math.log2(n))


def triangular_solve(an: Walker, op: Any, w: Work) -> None:
    a = tensor_type(op.operands[0].type)
    b = element_count(op.operands[1])
    if a is None or not a.static or b is None or not a.shape:
        return _dynamic(w, op.name)
    m = a.shape[-1]
    w.add_flops(op.name, float(m) * b)  # batch * m^2 * n, with b holding batch * m * n


def cholesky(an: Walker, op: Any, w: Work) -> None:
    a = tensor_type(op.operands[0].type)
    if a is None or not a.static or not a.shape:
        return _dynamic(w, op.name)
    n = a.shape[-1]
    batch = a.size // (n * n) if n else 0  # type: ignore[operator]
    w.add_flops(op.name, batch * n ** 3 / 3.0)  # type: ignore[operator]


# Op name -> its cost function, called as ``fn(walker, op, work)``. The walker's own table
# (``structure``) adds the ops that nest others: calls, loops and branches.
OP_PRICES: dict[str, Callable[[Any, Any, Work], None]] = {
    "stablehlo.custom_call": custom_call,
    "stablehlo.dot_general": dot_general,
    "stablehlo.dot": dot_general,
    "stablehlo.convolution": convolution,
    "stablehlo.reduce": reduce,
    "stablehlo.reduce_window": reduce_window,
    "stablehlo.select_and_scatter": select_and_scatter,
    "stablehlo.scatter": scatter,
    "stablehlo.gather": lookup,
    "stablehlo.dynamic_gather": lookup,
    "stablehlo.dynamic_slice": lookup,
    "stablehlo.real_dynamic_slice": lookup,
    "stablehlo.dynamic_update_slice": lookup,
    "stablehlo.constant": constant,
    "chlo.constant": constant,
    "stablehlo.sort": sort,
    "stablehlo.fft": fft,
    "stablehlo.triangular_solve": triangular_solve,
    "stablehlo.cholesky": cholesky,
}
