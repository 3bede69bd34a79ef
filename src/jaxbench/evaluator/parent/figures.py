"""The timing figures, computed in the parent from the raw samples the trusted runner
measured (:mod:`jaxbench.evaluator.judge.timing`): medians, interquartile ranges, spread and
speedup. The device figure is the headline when the trace
gave one for every call, and the result records which (``timing_method``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, TypedDict

from jaxbench.evaluator.common.intervals import speedup_interval

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
    # the headline speedup's 95 % confidence interval (ratio of the two medians' intervals)
    speedup_interval: list[float] | None
    ref_reps: int  # the reference's samples behind the headline (the kernel's: reps)
    reference: str  # measured beside the kernel, reused from an earlier one, or remeasured
    remeasured_because: str
    trace_retried_because: str  # a round's trace lost calls' events and was taken again
    stopped: str  # why the timing stopped: interval, reps or seconds
    rounds: int  # the profiler traces it took
    input_sets: Any
    warmup_rounds: Any
    wall: Figures
    device: DeviceFigures
    device_error: str


def figures(ref: Sequence[float], cand: Sequence[float], paired: bool = True) -> Figures:
    """Medians (ms), interquartile ranges (ms), relative spread and speedup of the samples:
    paired ones (as many of each side), or with ``paired=False`` a reference timed apart
    (reused from an earlier candidate, or fewer calls than the kernel)."""
    ref, cand = [float(x) for x in ref], [float(x) for x in cand]
    if not ref or not cand or (paired and len(ref) != len(cand)):
        raise ValueError("timing samples missing or unpaired")
    if min(ref + cand) < 0:
        raise ValueError("negative timing samples")
    t_ref, t_cand = statistics.median(ref), statistics.median(cand)
    iqr_ref, iqr_cand = _iqr(ref), _iqr(cand)
    return {
        "t_ref_ms": t_ref * 1e3,
        "t_kernel_ms": t_cand * 1e3,
        "speedup": t_ref / t_cand if t_cand > 0 else None,
        "reps": len(cand),
        "t_ref_iqr_ms": iqr_ref * 1e3,
        "t_kernel_iqr_ms": iqr_cand * 1e3,
        # the larger of the two relative IQRs: how far apart repeated calls are
        "spread": max(iqr_ref / t_ref if t_ref > 0 else 0.0, iqr_cand / t_cand if t_cand > 0 else 0.0),
    }


def summarize(samples: dict[str, Any]) -> TimingSummary:
    """Figures from the runner's raw samples: the device-trace figures when the trace gave
    them (``timing_method: device_trace``), else the wall-clock ones; both are kept."""
    paired = not samples.get("reference")  # the adaptive timing says how it got the reference
    wall = figures(samples.get("ref_s", []), samples.get("kernel_s", []), paired)
    device = samples.get("device") or {}
    headline, method, error = wall, WALL, ""
    headline_samples = (samples.get("ref_s", []), samples.get("kernel_s", []))
    if device.get("ref_s"):
        try:
            ref_dev, ker_dev = device["ref_s"], device["kernel_s"]
            headline, method = figures(ref_dev, ker_dev, paired), DEVICE
            headline_samples = (ref_dev, ker_dev)
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
    _, low, high = speedup_interval(*headline_samples)
    summary["speedup_interval"] = None if low is None or high is None else [low, high]
    summary["ref_reps"] = len(headline_samples[0])
    for key in ("reference", "remeasured_because", "trace_retried_because", "stopped", "rounds"):
        if samples.get(key) is not None:
            summary[key] = samples[key]  # type: ignore[literal-required]
    return summary


# z = 1.96 (95 %), halved: the order statistics n/2 -+ z sqrt(n)/2 bound the median


def _iqr(xs: list[float]) -> float:
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]
