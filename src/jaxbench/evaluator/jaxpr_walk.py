"""Walks a jaxpr to find Pallas kernels and the heavy work done outside them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from jax.extend import core as jex_core

KERNEL_PRIMITIVES = ("pallas_call", "core_map", "mosaic_gpu_call")


@dataclass
class TraceReport:
    """What a candidate's jaxpr does: its kernels and the matmul/conv FLOPs outside them."""

    pallas_calls: int = 0
    outside_flops: float = 0.0
    outside_ops: dict[str, float] = field(default_factory=dict)
    callbacks: list[str] = field(default_factory=list)

    def add_outside(self, name: str, flops: float) -> None:
        self.outside_flops += flops
        self.outside_ops[name] = self.outside_ops.get(name, 0.0) + flops


def _dot_flops(eqn: Any) -> float:
    lhs, rhs = (v.aval for v in eqn.invars[:2])
    (lc, rc), (lb, _rb) = eqn.params["dimension_numbers"]
    contract = math.prod(lhs.shape[d] for d in lc)
    batch = math.prod(lhs.shape[d] for d in lb)
    lhs_free = math.prod(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
    rhs_free = math.prod(
        s for i, s in enumerate(rhs.shape)
        if i not in rc and i not in eqn.params["dimension_numbers"][1][1])
    return 2.0 * batch * lhs_free * rhs_free * contract


def _conv_flops(eqn: Any) -> float:
    out = eqn.outvars[0].aval
    rhs = eqn.invars[1].aval
    dn = eqn.params["dimension_numbers"]
    # rhs_spec: (out-channel dim, in-channel dim, spatial dims...)
    rhs_spec = dn.rhs_spec
    in_ch = rhs.shape[rhs_spec[1]]
    window = math.prod(rhs.shape[d] for d in rhs_spec[2:])
    return 2.0 * math.prod(out.shape) * in_ch * window


HEAVY = {"dot_general": _dot_flops, "conv_general_dilated": _conv_flops}
CALLBACKS = ("pure_callback", "io_callback", "debug_callback", "callback")


def _sub_jaxprs(params: dict[str, Any]):
    for value in params.values():
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, jex_core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, jex_core.Jaxpr):
                yield item


def walk(jaxpr: Any, report: TraceReport | None = None, repeat: float = 1.0) -> TraceReport:
    """Counts kernels, outside FLOPs (scaled by loop trip counts) and host callbacks."""
    report = report or TraceReport()
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in KERNEL_PRIMITIVES:
            report.pallas_calls += 1
            continue
        if name in CALLBACKS:
            report.callbacks.append(name)
        if name in HEAVY:
            report.add_outside(name, repeat * HEAVY[name](eqn))
        trips = float(eqn.params.get("length", 1)) if name == "scan" else 1.0
        for sub in _sub_jaxprs(eqn.params):
            walk(sub, report, repeat * trips)
    return report
