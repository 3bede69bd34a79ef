"""The benchmark's metrics, exactly as docs/design.md defines them. Pure functions.

A *sample* is one evaluated candidate: ``(correct: bool, speedup: float | None)``.
Per task, samples are in the order they were drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Sample = tuple[bool, float | None]


def speedup(t_ref: float, t_kernel: float) -> float:
    """s = t_ref / t_kernel."""
    return t_ref / t_kernel


def _beats(sample: Sample, p: float) -> bool:
    correct, s = sample
    return bool(correct) and s is not None and s > p


def fast_p(results: Mapping[str, Sample], p: float) -> float:
    """KernelBench fast_p: fraction of tasks whose kernel is correct with s > p."""
    if not results:
        return 0.0
    return sum(_beats(r, p) for r in results.values()) / len(results)


def fast_p_at_n(samples: Mapping[str, Sequence[Sample]], p: float, n: int) -> float:
    """JAXBench fast_p@N: fraction of tasks with a correct sample with s > p among the first N."""
    if not samples:
        return 0.0
    return sum(any(_beats(s, p) for s in seq[:n]) for seq in samples.values()) / len(samples)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of the chance that ``k`` of a task's ``n`` samples, drawn without
    replacement, hold at least one of its ``c`` good ones: ``1 - C(n-c, k) / C(n, k)`` (the
    pass@k estimator of Chen et al., 2021). With ``k >= n`` it is whether any sample is good."""
    if n <= 0 or c <= 0:
        return 0.0
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def correct_at_k(samples: Mapping[str, Sequence[Sample]], k: int) -> float:
    """correct@k for independent samples: the mean over tasks of pass@k with "good" = correct."""
    if not samples:
        return 0.0
    return sum(pass_at_k(len(seq), sum(bool(ok) for ok, _ in seq), k)
               for seq in samples.values()) / len(samples)


def fast_p_at_k(samples: Mapping[str, Sequence[Sample]], p: float, k: int) -> float:
    """fast_p@k for independent samples: the mean over tasks of pass@k with "good" = correct
    with s > p."""
    if not samples:
        return 0.0
    return sum(pass_at_k(len(seq), sum(_beats(x, p) for x in seq), k)
               for seq in samples.values()) / len(samples)


def best_speedup(seq: Sequence[Sample]) -> float | None:
    """The best speedup over a task's correct samples (None when none is correct and timed)."""
    speeds = [s for ok, s in seq if ok and s is not None]
    return max(speeds) if speeds else None


def geomean_speedup(samples: Mapping[str, Sequence[Sample]]) -> float:
    """JAXBench aggregation: best s per task, no correct sample counts as 1, floor at 1, geomean."""
    if not samples:
        return 1.0
    logs = [math.log(max(best_speedup(seq) or 1.0, 1.0)) for seq in samples.values()]
    return math.exp(sum(logs) / len(logs))


def geomean_speedup_unfloored(samples: Mapping[str, Sequence[Sample]]) -> float | None:
    """Geomean of the best speedup over the tasks that have a correct, timed sample."""
    best = [b for b in (best_speedup(seq) for seq in samples.values()) if b is not None]
    if not best:
        return None
    return math.exp(sum(math.log(b) for b in best) / len(best))


def rate(flags: Sequence[bool]) -> float:
    """Fraction of true flags (compile rate, correct rate)."""
    return sum(bool(f) for f in flags) / len(flags) if flags else 0.0
