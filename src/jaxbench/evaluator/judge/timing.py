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
    ref_wall_s: list[float]  # the same calls' wall clock, where it was asked for
    kernel_wall_s: list[float]


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

        return compat.profile_trace(directory, compat.lean_profile_options())

    def annotate(self, name: str) -> Any:
        from jaxbench import compat

        return compat.trace_annotation(name)

    def read(self, directory: str) -> list[dict[str, Any]]:
        from jaxbench import compat

        return compat.read_profile(directory)


def time_device(
    reference: Callable[..., Any] | None,
    candidate: Callable[..., Any],
    input_sets: Sequence[tuple],
    *,
    reps: int = 20,
    ref_reps: int | None = None,
    offset: int = 0,
    directory: str | None = None,
    profiler: Profiler | None = None,
    perf_counter: Callable[[], float] | None = None,
) -> DeviceSamples:
    """``reps`` interleaved calls of each side (inputs rotating) inside one profiler trace,
    each call in its own named range; returns the per-call device seconds of each side, or
    ``{"error": ...}`` when the trace does not give a device time for every call. The caller
    has warmed both functions up.

    ``ref_reps``: the reference runs only in the first ``ref_reps`` repetitions (0 or a
    ``reference`` of None: the kernel alone). ``offset``: where the input rotation and the
    alternating order start (a later round of :func:`time_adaptive`). ``perf_counter``: the
    wall clock of each call is kept too (``ref_wall_s``, ``kernel_wall_s``)."""
    profiler = profiler or Profiler()
    labels: list[str] = []
    walls: dict[str, list[float]] = {"ref": [], "kernel": []}
    ref_reps = reps if ref_reps is None else min(ref_reps, reps)
    if reference is None:
        ref_reps = 0
    try:
        with _directory(directory) as where:
            with profiler.trace(where):
                for rep in range(reps):
                    inputs = input_sets[(rep + offset) % len(input_sets)]
                    for name, fn in _order(rep + offset, reference, candidate):
                        if name == "ref" and rep >= ref_reps:
                            continue
                        label = f"{ANNOTATION}:{name}:{rep}"
                        t0 = perf_counter() if perf_counter is not None else 0.0
                        with profiler.annotate(label):
                            jax.block_until_ready(fn(*inputs))
                        if perf_counter is not None:
                            walls[name].append(perf_counter() - t0)
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
    samples: DeviceSamples = {
        "ref_s": [calls[f"{ANNOTATION}:ref:{r}"] for r in range(ref_reps)],
        "kernel_s": [calls[f"{ANNOTATION}:kernel:{r}"] for r in range(reps)],
        "events": found["events"], "source": found["source"]}
    if perf_counter is not None:
        samples["ref_wall_s"], samples["kernel_wall_s"] = walls["ref"], walls["kernel"]
    return samples


class KnownReference(TypedDict):
    """A reference's samples kept by the warm owner (per task and size: one chip per owner),
    device and wall-clock seconds per call, for later candidates' timings to reuse."""

    device: list[float]
    wall: list[float]


def timing_option_names() -> frozenset[str]:
    """The options a caller may set in ``Settings.timing``: :func:`time_adaptive`'s tunables,
    ``device_reps`` (0: the wall clock only) and ``reuse_reference`` (0: the reference is
    timed beside every candidate)."""
    import inspect

    taken = {"reference", "candidate", "input_sets", "perf_counter", "known", "directory",
             "profiler"}
    return frozenset(inspect.signature(time_adaptive).parameters) - taken | {"reuse_reference"}


def time_adaptive(
    reference: Callable[..., Any],
    candidate: Callable[..., Any],
    input_sets: Sequence[tuple],
    *,
    perf_counter: Callable[[], float],
    known: KnownReference | None = None,
    warmup: int = 3,
    max_warmup: int = 20,
    warmup_budget_s: float = 10.0,
    min_reps: int = 10,
    max_reps: int = 200,
    budget_s: float = 4.0,
    device_reps: int = 10,
    interval: float = 0.02,
    near: float = 0.05,
    check_reps: int = 5,
    directory: str | None = None,
    profiler: Profiler | None = None,
) -> dict[str, Any]:
    """The device-trace timing that stops when it knows (docs/evaluator.md, "Compiles beside
    the chip, timing that stops when it knows").

    Rounds of calls, each in its own profiler trace (the first ``device_reps`` calls, then
    doubling). The reference is timed beside the kernel (interleaved) unless ``known`` holds
    its samples from an earlier candidate of the same task and size on this chip: then it
    runs only ``check_reps`` times in the first round, on this candidate's inputs, and is
    timed again (interleaved, as if unknown) when those differ from the known median by more
    than ``near`` (drift, or inputs it is slower on) or when the speedup comes out within
    ``near`` of 1x (where the verdict depends on it). Stops once the speedup's confidence
    interval (:func:`jaxbench.evaluator.common.intervals.speedup_interval`) is within
    ``interval`` of it and each side measured here has ``min_reps`` samples; else at
    ``max_reps`` kernel calls or ``budget_s`` seconds.

    Returns the raw samples (:class:`~jaxbench.contract.records.TimingSamples`) with
    ``reference`` ("measured", "reused", "remeasured") and why it stopped; or
    ``{"device": {"error": ...}}`` where a round's trace twice gives no device time for some
    call (:func:`_round`; the caller falls back to the wall clock)."""
    from jaxbench.evaluator.common.intervals import speedup_interval

    reuse = known is not None and bool(known.get("device"))
    rounds = _warm_adaptive(reference, candidate, input_sets, reuse, perf_counter, warmup,
                            max_warmup, warmup_budget_s)
    state = "reused" if reuse else "measured"
    why = ""
    ref_dev: list[float] = []
    ker_dev: list[float] = []
    ref_wall: list[float] = []
    ker_wall: list[float] = []
    check: list[float] = []
    events, source, round_no, stopped, retried = 0, "", 0, "", ""
    started = perf_counter()
    reps = max(device_reps, 1)
    while True:
        ref_reps = (check_reps if round_no == 0 else 0) if state == "reused" else reps
        got, lost = _round(reference, candidate, input_sets, reps, ref_reps, len(ker_dev),
                           directory and f"{directory}/{round_no}", profiler, perf_counter)
        retried = retried or lost
        if "error" in got:
            return {"device": {"error": got["error"]}, "warmup_rounds": rounds}
        round_no += 1
        events += int(got.get("events", 0))
        source = str(got.get("source", ""))
        ker_dev += got["kernel_s"]
        ker_wall += got.get("kernel_wall_s", [])
        if state == "reused" and round_no == 1:
            check = list(got["ref_s"])
            assert known is not None
            middle = statistics.median(known["device"])
            if check and middle > 0 and abs(statistics.median(check) / middle - 1) > near:
                state, why = "remeasured", "the reference's check differed from its known time"
                ref_dev, ref_wall = list(check), list(got.get("ref_wall_s", []))
        elif state != "reused":
            ref_dev += got["ref_s"]
            ref_wall += got.get("ref_wall_s", [])
        baseline = known["device"] if state == "reused" and known is not None else ref_dev
        speedup, low, high = speedup_interval(baseline, ker_dev)
        if state == "reused" and speedup is not None and abs(speedup - 1) <= near:
            state, why = "remeasured", f"the speedup is within {near:.0%} of 1x"
            reps = max(min_reps, device_reps)
            continue
        enough = len(ker_dev) >= min_reps and (state == "reused" or len(ref_dev) >= min_reps)
        stopped = _stop(enough and bool(speedup) and low is not None and high is not None
                        and (high - low) / 2 <= interval * (speedup or 0.0),
                        len(ker_dev), min_reps, max_reps, perf_counter() - started >= budget_s)
        if stopped:
            break
        reps = max(1, min(max_reps - len(ker_dev), max(len(ker_dev), min_reps)))
    reused = state == "reused" and known is not None
    samples: dict[str, Any] = {
        "ref_s": list(known["wall"]) if reused and known is not None else ref_wall,
        "kernel_s": ker_wall, "input_sets": len(input_sets), "warmup_rounds": rounds,
        "device": {"ref_s": list(known["device"]) if reused and known is not None else ref_dev,
                   "kernel_s": ker_dev, "events": events, "source": source},
        "reference": state, "stopped": stopped, "rounds": round_no}
    samples.update({k: v for k, v in (("reference_check_s", check),
                                      ("remeasured_because", why),
                                      ("trace_retried_because", retried)) if v})
    return samples


def _round(reference: Callable[..., Any], candidate: Callable[..., Any],
           input_sets: Sequence[tuple], reps: int, ref_reps: int, offset: int,
           directory: str | None, profiler: Profiler | None,
           perf_counter: Callable[[], float]) -> tuple[DeviceSamples, str]:
    """One round of :func:`time_adaptive` (:func:`time_device`), taken once more when its
    trace lost some calls' device events (on a TPU v5e one lost 2 of 20, and the wall-clock
    fallback took 30 s); with why the first was not kept ("" if it was)."""
    lost = ""
    for attempt in range(2):
        got = time_device(reference, candidate, input_sets, reps=reps, ref_reps=ref_reps,
                          offset=offset, directory=None if directory is None else
                          directory + (f"-{attempt}" if attempt else ""),
                          profiler=profiler, perf_counter=perf_counter)
        if "error" not in got:
            break
        lost = str(got["error"])
    return got, lost


def _warm_adaptive(reference: Callable[..., Any], candidate: Callable[..., Any],
                   input_sets: Sequence[tuple], reuse: bool, perf_counter: Callable[[], float],
                   warmup: int, max_warmup: int, budget_s: float) -> int:
    """Warms both sides up (:func:`warm_up`), or, where the reference's time is reused, the
    kernel alone and the reference once on each input set (warm once, not necessarily now)."""
    def idle(*_: Any) -> None:
        return None

    rounds = warm_up(idle if reuse else reference, candidate, input_sets,
                     perf_counter=perf_counter, rounds=warmup, max_rounds=max(warmup, max_warmup),
                     budget_s=budget_s)
    if reuse:
        for inputs in input_sets:
            jax.block_until_ready(reference(*inputs))
    return rounds


def _stop(narrow: bool, calls: int, min_reps: int, max_reps: int, out_of_time: bool) -> str:
    """Why the adaptive timing stops now ("" to go on): the interval is narrow enough, the
    kernel's calls reached ``max_reps``, or the time budget ran out (after ``min_reps``)."""
    if narrow:
        return "interval"
    if calls >= max_reps:
        return "reps"
    if out_of_time and calls >= min(min_reps, max_reps):
        return "seconds"
    return ""


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
