"""Confidence intervals of timing medians, shared by the side that times (the chip's owner
stops its adaptive timing when the speedup's interval is narrow enough: judge/timing.py) and
the side that reports (the parent's figures record the interval: parent/figures.py)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["median_interval", "speedup_interval"]

_Z_HALF = 0.98


def median_interval(xs: Sequence[float]) -> tuple[float, float]:
    """A distribution-free ~95 % confidence interval of the median of ``xs`` (order
    statistics around the middle; the whole range for a handful of samples)."""
    ordered = sorted(float(x) for x in xs)
    n = len(ordered)
    if n == 0:
        raise ValueError("no samples")
    half = _Z_HALF * math.sqrt(n)
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return ordered[lo], ordered[max(lo, hi)]


def speedup_interval(ref: Sequence[float], cand: Sequence[float]
                     ) -> tuple[float | None, float | None, float | None]:
    """(speedup, low, high): the ratio of the medians and a conservative ~95 % interval of
    it, from the two medians' intervals (:func:`median_interval`); Nones where a side has no
    samples or a time of zero. The timing stops once it is narrow enough (judge/timing.py's
    ``time_adaptive``) and the result records it (``stages.time.speedup_interval``)."""
    if not ref or not cand:
        return None, None, None
    t_ref, t_cand = statistics.median(ref), statistics.median(cand)
    (r_lo, r_hi), (c_lo, c_hi) = median_interval(ref), median_interval(cand)
    if t_cand <= 0 or c_lo <= 0:
        return None, None, None
    return t_ref / t_cand, r_lo / c_hi, r_hi / c_lo
