"""Device timing: interleaved A/B repetitions over rotating input sets, robust statistics."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import jax


def time_interleaved(
    reference: Callable[..., Any],
    candidate: Callable[..., Any],
    input_sets: Sequence[tuple],
    *,
    perf_counter: Callable[[], float],
    warmup: int = 3,
    min_reps: int = 10,
    max_reps: int = 200,
    budget_s: float = 4.0,
) -> dict[str, Any]:
    """Times both functions alternately (A B B A ...), cycling through ``input_sets``.

    Alternating the order cancels drift (clocks, thermals) between the two;
    rotating inputs keeps either from running on cache-hot data. Returns the
    medians in ms, their interquartile spreads and the speedup t_ref / t_kernel.
    """
    for _ in range(warmup):
        for inputs in input_sets:
            jax.block_until_ready(reference(*inputs))
            jax.block_until_ready(candidate(*inputs))
    ref_times: list[float] = []
    cand_times: list[float] = []
    started = perf_counter()
    rep = 0
    while rep < max_reps and (rep < min_reps or perf_counter() - started < budget_s):
        inputs = input_sets[rep % len(input_sets)]
        pair = [(reference, ref_times), (candidate, cand_times)]
        for fn, sink in pair if rep % 2 == 0 else pair[::-1]:
            t0 = perf_counter()
            jax.block_until_ready(fn(*inputs))
            sink.append(perf_counter() - t0)
        rep += 1
    t_ref, t_cand = statistics.median(ref_times), statistics.median(cand_times)
    return {
        "t_ref_ms": t_ref * 1e3,
        "t_kernel_ms": t_cand * 1e3,
        "speedup": t_ref / t_cand if t_cand > 0 else None,
        "reps": rep,
        "t_ref_iqr_ms": _iqr(ref_times) * 1e3,
        "t_kernel_iqr_ms": _iqr(cand_times) * 1e3,
        "input_sets": len(input_sets),
    }


def _iqr(xs: list[float]) -> float:
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]
