"""Device timing: interleaved A/B repetitions over rotating input sets; statistics apart.

:func:`time_interleaved` runs in the trusted runner and returns raw samples;
:func:`summarize` runs in the parent, which computes every figure itself.
"""

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
    per-repetition seconds of each side.
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
    return {"ref_s": ref_times, "kernel_s": cand_times, "input_sets": len(input_sets)}


def summarize(samples: dict[str, Any]) -> dict[str, Any]:
    """Medians (ms), interquartile spreads and speedup t_ref / t_kernel from raw samples."""
    ref = [float(x) for x in samples.get("ref_s", [])]
    cand = [float(x) for x in samples.get("kernel_s", [])]
    if not ref or not cand or len(ref) != len(cand):
        raise ValueError("timing samples missing or unpaired")
    t_ref, t_cand = statistics.median(ref), statistics.median(cand)
    return {
        "t_ref_ms": t_ref * 1e3,
        "t_kernel_ms": t_cand * 1e3,
        "speedup": t_ref / t_cand if t_cand > 0 else None,
        "reps": len(ref),
        "t_ref_iqr_ms": _iqr(ref) * 1e3,
        "t_kernel_iqr_ms": _iqr(cand) * 1e3,
        "input_sets": samples.get("input_sets"),
    }


def _iqr(xs: list[float]) -> float:
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]
