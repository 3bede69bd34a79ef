"""The timing figures, computed in the parent from the raw samples the trusted runner
measured (:mod:`jaxbench.evaluator.judge.timing`): medians, interquartile ranges, spread and
speedup. The device figure is the headline when the trace
gave one for every call, and the result records which (``timing_method``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, TypedDict

WALL = "wall_clock_interleaved"
DEVICE = "device_trace"


class Figures(TypedDict):
    """The figures of paired samples (:func:`figures`): medians and interquartile ranges in
    milliseconds, the repetitions, the larger relative spread, and the speedup (None where the
    kernel's median is zero)."""

    t_ref_ms: float
    t_kernel_ms: float
    speedup: float | None
    reps: int
    t_ref_iqr_ms: float
    t_kernel_iqr_ms: float
    spread: float


class DeviceFigures(Figures):
    """The device-trace figures, with where the trace's events came from and how many."""

    source: Any
    events: Any


class TimingSummary(Figures, total=False):
    """What :func:`summarize` makes of the runner's samples (the result's ``time`` stage):
    the headline :class:`Figures`, the method they came from, the wall-clock figures and,
    where the trace gave them, the device's (or why it did not)."""

    timing_method: str  # WALL or DEVICE: which figures are the headline
    input_sets: Any
    warmup_rounds: Any
    wall: Figures
    device: DeviceFigures
    device_error: str


def figures(ref: Sequence[float], cand: Sequence[float]) -> Figures:
    """Medians (ms), interquartile ranges (ms), relative spread and speedup of paired samples."""
    ref, cand = [float(x) for x in ref], [float(x) for x in cand]
    if not ref or not cand or len(ref) != len(cand):
        raise ValueError("timing samples missing or unpaired")
    if min(ref + cand) < 0:
        raise ValueError("negative timing samples")
    t_ref, t_cand = statistics.median(ref), statistics.median(cand)
    iqr_ref, iqr_cand = _iqr(ref), _iqr(cand)
    return {
        "t_ref_ms": t_ref * 1e3,
        "t_kernel_ms": t_cand * 1e3,
        "speedup": t_ref / t_cand if t_cand > 0 else None,
        "reps": len(ref),
        "t_ref_iqr_ms": iqr_ref * 1e3,
        "t_kernel_iqr_ms": iqr_cand * 1e3,
        # the larger of the two relative IQRs: how far apart repeated calls are
        "spread": max(iqr_ref / t_ref if t_ref > 0 else 0.0, iqr_cand / t_cand if t_cand > 0 else 0.0),
    }


def summarize(samples: dict[str, Any]) -> TimingSummary:
    """Figures from the runner's raw samples: the device-trace figures when the trace gave
    them (``timing_method: device_trace``), else the wall-clock ones; both are kept."""
    wall = figures(samples.get("ref_s", []), samples.get("kernel_s", []))
    device = samples.get("device") or {}
    headline, method, error = wall, WALL, ""
    if device.get("ref_s"):
        try:
            headline, method = figures(device["ref_s"], device["kernel_s"]), DEVICE
        except ValueError as exc:
            error = str(exc)
    elif device.get("error"):
        error = str(device["error"])[:500]
    summary: TimingSummary = {**headline, "input_sets": samples.get("input_sets"),
                              "warmup_rounds": samples.get("warmup_rounds"), "wall": wall}
    if method == DEVICE:
        summary["device"] = {**headline, "source": device.get("source"),
                             "events": device.get("events")}
    if error:
        summary["device_error"] = error
    summary["timing_method"] = method
    return summary


def _iqr(xs: list[float]) -> float:
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]
