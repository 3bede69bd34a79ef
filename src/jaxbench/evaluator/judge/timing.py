"""Device timing: interleaved A/B repetitions over rotating input sets (the raw samples).

Two measurements of the same compiled modules, both in the trusted runner:

- :func:`time_interleaved`: wall clock per call around ``block_until_ready`` (Python dispatch
  and launch overhead included: it swamps kernels of a few microseconds);
- :func:`time_device`: the same alternating calls inside a profiler trace; each call's device
  time is the sum of the device kernel events that ran inside it (read back from the trace
  by :func:`device_times`).

Both rotate input sets larger than the chip's last-level cache between calls and warm up
until the per-round time is stable, and return the raw samples only: the parent computes every
figure itself from them (:mod:`jaxbench.evaluator.parent.figures`).
"""

from __future__ import annotations

import bisect
import contextlib
import statistics
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypedDict

import jax

ANNOTATION = "jaxbench_timed"
# Lines of a device plane that summarize other lines (counting them would count twice).
DERIVED_LINES = frozenset({"XLA Modules", "Steps", "Framework Ops", "Framework Name Scope",
                           "Source code", "XLA TraceMe", "TensorFlow Ops", "TensorFlow Name Scope",
                           "Launch Stats", "Host Offload Ops"})


class DeviceSamples(TypedDict, total=False):
    """What :func:`time_device` measured: the per-call device seconds of each side, the
    events counted and where they came from; or only ``error``, why the trace gave no device
    time for every call."""

    ref_s: list[float]
    kernel_s: list[float]
    events: int
    source: str
    error: str


class CallTimes(TypedDict):
    """A trace read back (:func:`device_times`): each timed call's device seconds by its
    label, the events counted, where they came from, and the planes seen."""

    calls: dict[str, float]
    events: int
    source: str
    planes: list[str]


def warm_up(reference: Callable[..., Any], candidate: Callable[..., Any],
            input_sets: Sequence[tuple], *, perf_counter: Callable[[], float], rounds: int = 3,
            max_rounds: int = 20, tolerance: float = 0.1, budget_s: float = 10.0) -> int:
    """Runs both functions over every input set at least ``rounds`` times, then until the last
    three rounds took times within ``tolerance`` of their median (or ``max_rounds`` /
    ``budget_s`` is reached). Returns the number of rounds run."""
    if rounds <= 0:
        return 0
    times: list[float] = []
    started = perf_counter()
    while len(times) < max_rounds:
        t0 = perf_counter()
        for inputs in input_sets:
            jax.block_until_ready(reference(*inputs))
            jax.block_until_ready(candidate(*inputs))
        times.append(perf_counter() - t0)
        if len(times) >= max(rounds, 3) and stable(times[-3:], tolerance):
            break
        if perf_counter() - started > budget_s and len(times) >= rounds:
            break
    return len(times)


def stable(times: Sequence[float], tolerance: float) -> bool:
    """Whether the spread (max - min) of ``times`` is within ``tolerance`` of their median."""
    middle = statistics.median(times)
    return middle <= 0 or (max(times) - min(times)) <= tolerance * middle


def time_interleaved(
    reference: Callable[..., Any],
    candidate: Callable[..., Any],
    input_sets: Sequence[tuple],
    *,
    perf_counter: Callable[[], float],
    warmup: int = 3,
    max_warmup: int = 20,
    warmup_budget_s: float = 10.0,
    min_reps: int = 10,
    max_reps: int = 200,
    budget_s: float = 4.0,
) -> dict[str, Any]:
    """Times both functions alternately (A B B A ...), cycling through ``input_sets``.

    Alternating the order cancels drift (clocks, thermals) between the two;
    rotating inputs keeps either from running on cache-hot data. Returns the
    per-repetition seconds of each side.
    """
    rounds = warm_up(reference, candidate, input_sets, perf_counter=perf_counter, rounds=warmup,
                     max_rounds=max(warmup, max_warmup), budget_s=warmup_budget_s)
    ref_times: list[float] = []
    cand_times: list[float] = []
    started = perf_counter()
    rep = 0
    while rep < max_reps and (rep < min_reps or perf_counter() - started < budget_s):
        inputs = input_sets[rep % len(input_sets)]
        for name, fn in _order(rep, reference, candidate):
            t0 = perf_counter()
            jax.block_until_ready(fn(*inputs))
            (ref_times if name == "ref" else cand_times).append(perf_counter() - t0)
        rep += 1
    return {"ref_s": ref_times, "kernel_s": cand_times, "input_sets": len(input_sets),
            "warmup_rounds": rounds}


def _order(rep: int, reference: Any, candidate: Any) -> list[tuple[str, Any]]:
    pair = [("ref", reference), ("kernel", candidate)]
    return pair if rep % 2 == 0 else pair[::-1]


# -- device time from a profiler trace -------------------------------------------------------


class Profiler:
    """How :func:`time_device` records and reads a trace (JAX's profiler via
    :mod:`jaxbench.compat`; tests substitute their own)."""

    def trace(self, directory: str) -> Any:
        from jaxbench import compat

        return compat.profile_trace(directory)

    def annotate(self, name: str) -> Any:
        from jaxbench import compat

        return compat.trace_annotation(name)

    def read(self, directory: str) -> list[dict[str, Any]]:
        from jaxbench import compat

        return compat.read_profile(directory)


def time_device(
    reference: Callable[..., Any],
    candidate: Callable[..., Any],
    input_sets: Sequence[tuple],
    *,
    reps: int = 20,
    directory: str | None = None,
    profiler: Profiler | None = None,
) -> DeviceSamples:
    """``reps`` interleaved calls of each side (inputs rotating) inside one profiler trace,
    each call in its own named range; returns the per-call device seconds of each side, or
    ``{"error": ...}`` when the trace does not give a device time for every call. The caller
    has warmed both functions up."""
    profiler = profiler or Profiler()
    labels: list[str] = []
    try:
        with _directory(directory) as where:
            with profiler.trace(where):
                for rep in range(reps):
                    inputs = input_sets[rep % len(input_sets)]
                    for name, fn in _order(rep, reference, candidate):
                        label = f"{ANNOTATION}:{name}:{rep}"
                        with profiler.annotate(label):
                            jax.block_until_ready(fn(*inputs))
                        labels.append(label)
            planes = profiler.read(where)
    except Exception as exc:  # noqa: BLE001 - no profiler here: the wall clock stands alone
        return {"error": f"profiler trace failed: {type(exc).__name__}: {exc}"[:300]}
    found = device_times(planes)
    missing = [label for label in labels if label not in found["calls"]]
    if missing:
        return {"error": f"no device events inside {len(missing)} of {len(labels)} timed calls "
                         f"(first: {missing[0]}); device planes seen: {found['planes']}"[:500]}
    calls = found["calls"]
    return {"ref_s": [calls[f"{ANNOTATION}:ref:{r}"] for r in range(reps)],
            "kernel_s": [calls[f"{ANNOTATION}:kernel:{r}"] for r in range(reps)],
            "events": found["events"], "source": found["source"]}


@contextlib.contextmanager
def _directory(directory: str | None) -> Iterator[str]:
    if directory is not None:
        yield directory
        return
    with tempfile.TemporaryDirectory(prefix="jaxbench-trace-") as where:
        yield where


def device_events(planes: list[dict[str, Any]]) -> tuple[list[tuple[float, float, Any]], str]:
    """The kernel executions in a trace as ``(start_ns, duration_ns, run_id)``, and where they
    came from. Device planes (``/device:GPU:0``, ``/device:TPU:0``): the "XLA Ops" line where
    there is one, else every line but the summary lines (on a GPU, one line per stream with
    one event per kernel). Without device events (the CPU backend), the host's events that
    carry an ``hlo_op`` statistic (XLA's CPU thunks). Events nested inside another selected
    event of the same line are dropped, so nothing is counted twice."""
    chosen: list[tuple[str, list[Any]]] = []
    for plane in planes:
        if not str(plane["name"]).startswith("/device:"):
            continue
        lines = [line for line in plane["lines"] if line["events"]]
        ops = [line for line in lines if line["name"] == "XLA Ops"]
        for line in ops or [line for line in lines if line["name"] not in DERIVED_LINES]:
            chosen.append((f"{plane['name']}/{line['name']}", line["events"]))
    source = "device"
    if not any(events for _, events in chosen):
        source = "host_hlo_ops"
        chosen = []
        for plane in planes:
            if str(plane["name"]).startswith("/host:"):
                for line in plane["lines"]:
                    events = [e for e in line["events"] if "hlo_op" in e[3]]
                    if events:
                        chosen.append((f"{plane['name']}/{line['name']}", events))
    found = []
    for _, events in chosen:
        found += _outermost([(e[1], e[2], e[3].get("run_id")) for e in events])
    return sorted(found), source


def _outermost(events: list[tuple[float, float, Any]]) -> list[tuple[float, float, Any]]:
    kept: list[tuple[float, float, Any]] = []
    end = float("-inf")
    for start, duration, run in sorted(events, key=lambda e: (e[0], -e[1])):
        if start + duration <= end:  # inside the last kept event
            continue
        kept.append((start, duration, run))
        end = max(end, start + duration)
    return kept


def annotation_windows(planes: list[dict[str, Any]]) -> list[tuple[float, float, str]]:
    """``(start_ns, end_ns, label)`` of the timed calls' named ranges, in time order."""
    windows = []
    for plane in planes:
        for line in plane["lines"]:
            for name, start, duration, _ in line["events"]:
                if str(name).startswith(ANNOTATION + ":"):
                    windows.append((start, start + duration, str(name)))
    return sorted(windows)


def device_times(planes: list[dict[str, Any]]) -> CallTimes:
    """Per timed call (by label), the summed duration in seconds of the device events that ran
    inside its range. An event belongs to the range holding its midpoint; when the device's
    events fall in no range (clocks not aligned) but carry run ids, one id per call, the
    executions are matched to the calls in order."""
    events, source = device_events(planes)
    windows = annotation_windows(planes)
    starts = [w[0] for w in windows]
    per: dict[str, list[tuple[float, float, Any]]] = {}
    for event in events:
        middle = event[0] + event[1] / 2
        i = bisect.bisect_right(starts, middle) - 1
        if i >= 0 and middle <= windows[i][1]:
            per.setdefault(windows[i][2], []).append(event)
    if windows and len(per) < len(windows):
        runs: dict[Any, list[tuple[float, float, Any]]] = {}
        for event in events:
            if event[2] is not None:
                runs.setdefault(event[2], []).append(event)
        if len(runs) == len(windows):
            ordered = sorted(runs.values(), key=lambda group: min(e[0] for e in group))
            per = {w[2]: group for w, group in zip(windows, ordered, strict=True)}
            source += ", matched by run id"
    planes_seen = sorted({str(p["name"]) for p in planes})
    return {"calls": {label: sum(e[1] for e in group) / 1e9 for label, group in per.items()},
            "events": sum(len(group) for group in per.values()), "source": source,
            "planes": planes_seen}
