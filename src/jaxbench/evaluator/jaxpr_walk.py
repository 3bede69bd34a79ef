"""Walks a jaxpr to find Pallas kernels and the work done outside them.

Outside work is counted in FLOPs: matmuls and convolutions exactly, and one
FLOP per element for floating-point elementwise math and reductions. Glue
(reshapes, transposes, casts, padding, slicing, index arithmetic on integers)
is free: moving data around a kernel is allowed, computing the answer in XLA
is not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from jax.extend import core as jex_core

KERNEL_PRIMITIVES = ("pallas_call", "core_map", "mosaic_gpu_call")
CALLBACKS = ("pure_callback", "io_callback", "debug_callback", "callback")

# Data movement and bookkeeping: free outside kernels.
GLUE = frozenset({
    "reshape", "broadcast_in_dim", "transpose", "convert_element_type", "squeeze", "expand_dims",
    "pad", "slice", "dynamic_slice", "dynamic_update_slice", "concatenate", "gather", "iota",
    "copy", "copy_p", "rev", "bitcast_convert_type", "device_put", "split", "stop_gradient",
    "select_n", "scatter", "sharding_constraint", "optimization_barrier", "random_bits",
    "random_wrap", "random_unwrap", "random_seed", "threefry2x32", "tile", "squeeze_p",
    "empty", "full", "zeros_like", "real", "imag", "reduce_precision",
})


@dataclass
class TraceReport:
    """What a candidate's jaxpr does: its kernels and the FLOPs spent outside them."""

    pallas_calls: int = 0
    outside_flops: float = 0.0
    outside_ops: dict[str, float] = field(default_factory=dict)
    callbacks: list[str] = field(default_factory=list)

    def add_outside(self, name: str, flops: float) -> None:
        self.outside_flops += flops
        self.outside_ops[name] = self.outside_ops.get(name, 0.0) + flops

    def top_ops(self, n: int = 3) -> str:
        ranked = sorted(self.outside_ops.items(), key=lambda kv: -kv[1])[:n]
        return ", ".join(f"{k} {v:.3g}" for k, v in ranked)


def _dot_flops(eqn: Any) -> float:
    lhs, rhs = (v.aval for v in eqn.invars[:2])
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    contract = math.prod(lhs.shape[d] for d in lc)
    batch = math.prod(lhs.shape[d] for d in lb)
    lhs_free = math.prod(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
    rhs_free = math.prod(s for i, s in enumerate(rhs.shape) if i not in rc and i not in rb)
    return 2.0 * batch * lhs_free * rhs_free * contract


def _conv_flops(eqn: Any) -> float:
    out = eqn.outvars[0].aval
    rhs = eqn.invars[1].aval
    rhs_spec = eqn.params["dimension_numbers"].rhs_spec  # (out-ch, in-ch, spatial...)
    in_ch = rhs.shape[rhs_spec[1]]
    window = math.prod(rhs.shape[d] for d in rhs_spec[2:])
    return 2.0 * math.prod(out.shape) * in_ch * window


HEAVY = {"dot_general": _dot_flops, "conv_general_dilated": _conv_flops}


def _is_float(aval: Any) -> bool:
    dtype = getattr(aval, "dtype", None)
    try:
        return dtype is not None and np.issubdtype(np.dtype(dtype), np.floating)
    except TypeError:  # extended dtypes (PRNG keys)
        return False


def _size(aval: Any) -> int:
    shape = getattr(aval, "shape", ())
    return math.prod(shape) if shape else 1


def _elementwise_flops(eqn: Any) -> float:
    """One FLOP per element touched, for float math; 0 for integer/bool bookkeeping."""
    avals = [v.aval for v in (*eqn.invars, *eqn.outvars) if hasattr(v, "aval")]
    floats = [a for a in avals if _is_float(a)]
    if not floats:
        return 0.0
    return float(max(_size(a) for a in floats))


def _sub_jaxprs(params: dict[str, Any]):
    for value in params.values():
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, jex_core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, jex_core.Jaxpr):
                yield item


def _callbacks_inside(jaxpr: Any, report: TraceReport) -> None:
    """Host callbacks inside a kernel body (``jax.debug.print``, ``pure_callback``...)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in CALLBACKS:
            report.callbacks.append(eqn.primitive.name)
        for sub in _sub_jaxprs(eqn.params):
            _callbacks_inside(sub, report)


def walk(jaxpr: Any, report: TraceReport | None = None, repeat: float = 1.0) -> TraceReport:
    """Counts kernels, outside FLOPs (scaled by loop trip counts) and host callbacks.

    Kernel bodies are not counted as outside work, but they are searched for host
    callbacks: a callback inside a kernel is host work all the same.
    """
    report = report or TraceReport()
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in KERNEL_PRIMITIVES:
            report.pallas_calls += 1
            for sub in _sub_jaxprs(eqn.params):
                _callbacks_inside(sub, report)
            continue
        if name in CALLBACKS:
            report.callbacks.append(name)
        subs = list(_sub_jaxprs(eqn.params))
        if name in HEAVY:
            report.add_outside(name, repeat * HEAVY[name](eqn))
        elif not subs and name not in GLUE:
            flops = _elementwise_flops(eqn)
            if flops:
                report.add_outside(name, repeat * flops)
        trips = float(eqn.params.get("length", 1)) if name == "scan" else 1.0
        for sub in subs:
            walk(sub, report, repeat * trips)
    return report
