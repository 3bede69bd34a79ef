"""The timing that stops when it knows (judge/timing.py, time_adaptive), without a device: a
pretend profiler gives each timed call the device time a schedule says. The reference's
samples are kept by the warm owner and reused by later candidates of the same task and size,
except where the verdict depends on them (a speedup near 1x) or the reference's check on the
candidate's inputs disagrees (drift); the kernel is timed until the speedup's interval is
narrow enough, or a cap."""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import pytest

from jaxbench.evaluator.common.intervals import median_interval, speedup_interval
from jaxbench.evaluator.judge import timing
from jaxbench.evaluator.judge.timing import time_adaptive
from jaxbench.evaluator.parent.figures import summarize


class ScheduledProfiler(timing.Profiler):
    """Each timed call's device seconds from ``schedule[side]`` (an iterator), reported as one
    host XLA op inside the call's range (the CPU backend's shape of a trace)."""

    def __init__(self, ref, kernel):
        self.schedule = {"ref": ref, "kernel": kernel}
        self.calls = {"ref": 0, "kernel": 0}
        self.traces = 0

    def trace(self, directory):
        import contextlib

        self.names = []
        self.traces += 1
        return contextlib.nullcontext()

    def annotate(self, name):
        import contextlib

        side = name.split(":")[1]
        self.calls[side] += 1
        self.names.append((name, next(self.schedule[side])))
        return contextlib.nullcontext()

    def read(self, directory):
        windows, ops, t = [], [], 0.0
        for name, seconds in self.names:
            windows.append((name, t, seconds * 1e9 + 100.0, {}))
            ops.append(("fusion", t + 50.0, seconds * 1e9, {"hlo_op": "fusion"}))
            t += seconds * 1e9 + 1000.0
        return [{"name": "/host:CPU", "lines": [{"name": "python", "events": windows},
                                                {"name": "XLA", "events": ops}]}]


def steady(ms, wobble=0.002):
    """Calls of ``ms`` milliseconds within ``wobble`` of each other."""
    return (ms * 1e-3 * (1 + wobble * s) for s in itertools.cycle([-1, 0, 1, 0.5, -0.5]))


def noop(*_):
    return None


def _time(profiler, known=None, **options):
    return time_adaptive(noop, noop, [(0,), (1,)], perf_counter=time.perf_counter, known=known,
                         warmup=0, profiler=profiler, **options)


def test_an_unknown_reference_is_timed_beside_the_kernel_and_the_timing_stops_when_narrow():
    profiler = ScheduledProfiler(steady(2.0), steady(1.0))
    samples = _time(profiler)
    assert samples["reference"] == "measured" and samples["stopped"] == "interval"
    assert samples["rounds"] == 1 and profiler.calls == {"ref": 10, "kernel": 10}
    out = summarize(samples)
    assert out["timing_method"] == "device_trace" and out["speedup"] == pytest.approx(2.0, 0.01)
    low, high = out["speedup_interval"]
    assert low <= out["speedup"] <= high and (high - low) / 2 <= 0.02 * out["speedup"]
    assert out["reps"] == out["ref_reps"] == 10 and out["reference"] == "measured"


def test_a_known_reference_is_reused_after_a_check_on_the_candidates_inputs():
    known = {"device": [2e-3] * 40, "wall": [2.5e-3] * 40}
    profiler = ScheduledProfiler(steady(2.0), steady(0.5))
    samples = _time(profiler, known=known)
    assert samples["reference"] == "reused" and samples["stopped"] == "interval"
    assert profiler.calls == {"ref": 5, "kernel": 10}  # 5 checks, not 10 interleaved calls
    assert len(samples["reference_check_s"]) == 5
    out = summarize(samples)  # unpaired: the reference's samples are the known ones
    assert out["speedup"] == pytest.approx(4.0, 0.01) and out["ref_reps"] == 40
    assert out["reps"] == 10 and out["reference"] == "reused"
    assert out["wall"]["t_ref_ms"] == pytest.approx(2.5)


def test_a_speedup_near_1x_remeasures_the_reference_beside_the_kernel():
    known = {"device": [2e-3] * 40, "wall": [2e-3] * 40}
    profiler = ScheduledProfiler(steady(2.0), steady(1.96))
    samples = _time(profiler, known=known)
    assert samples["reference"] == "remeasured"
    assert "within 5% of 1x" in samples["remeasured_because"]
    assert profiler.calls["ref"] >= 5 + 10 and len(samples["device"]["ref_s"]) >= 10
    assert summarize(samples)["speedup"] == pytest.approx(2.0 / 1.96, 0.01)


def test_a_reference_that_drifted_is_remeasured():
    known = {"device": [2e-3] * 40, "wall": [2e-3] * 40}
    profiler = ScheduledProfiler(steady(3.0), steady(1.0))  # the chip got slower, or the inputs
    samples = _time(profiler, known=known)
    assert samples["reference"] == "remeasured"
    assert "check differed" in samples["remeasured_because"]
    assert summarize(samples)["speedup"] == pytest.approx(3.0, 0.01)


def test_a_noisy_kernel_is_timed_until_the_cap():
    noisy = (1e-3 * s for s in itertools.cycle([0.5, 1.0, 1.5, 2.0, 0.7, 1.3]))
    profiler = ScheduledProfiler(steady(2.0), noisy)
    samples = _time(profiler, max_reps=60, budget_s=100.0)
    assert samples["stopped"] == "reps" and len(samples["device"]["kernel_s"]) == 60
    assert samples["rounds"] == 4  # 10, then 10, 20, 20 (doubling, capped)
    out = summarize(samples)
    low, high = out["speedup_interval"]
    assert (high - low) / 2 > 0.02 * out["speedup"]  # it said how little it knows
    budget = _time(ScheduledProfiler(steady(2.0), (1e-3 * s for s in itertools.cycle(
        [0.5, 1.0, 1.5, 2.0]))), max_reps=10_000, budget_s=0.0)
    assert budget["stopped"] == "seconds" and budget["rounds"] == 1


def test_no_trace_falls_back():
    class Broken(timing.Profiler):
        def trace(self, directory):
            raise RuntimeError("no profiler")

    samples = _time(Broken())
    assert "no profiler" in samples["device"]["error"]


def test_the_median_interval_and_the_speedup_interval():
    assert median_interval([5.0]) == (5.0, 5.0)
    xs = list(range(1, 101))
    lo, hi = median_interval(xs)
    assert 39 <= lo < 50.5 < hi <= 62
    speedup, low, high = speedup_interval([2.0] * 10, [1.0] * 10)
    assert (speedup, low, high) == (2.0, 2.0, 2.0)
    assert speedup_interval([], [1.0]) == (None, None, None)


def test_the_owner_reuses_the_reference_for_the_next_candidate_of_the_task(monkeypatch, tmp_path):
    """The runner's timing step (runner._time_on_chip), twice on the same fit (what the warm
    owner keeps per task and size): the first measures the reference, the second reuses it."""
    from jaxbench.contract import JudgeResponse
    from jaxbench.evaluator.judge import runner

    profilers = []

    def make():
        profilers.append(ScheduledProfiler(steady(2.0), steady(0.5)))
        return profilers[-1]

    monkeypatch.setattr(timing, "Profiler", make)
    fit = SimpleNamespace(reference=noop, reference_times=None)
    leases = []

    def judging_for(name):
        request = SimpleNamespace(timing={"warmup": 0}, timing_keys=[[0, 1]], recheck_keys=[],
                                  save_ir=False)
        judging = SimpleNamespace(request=request, first=(0,), compiled=noop, fit=fit,
                                  lease=leases.append, directory=tmp_path / name,
                                  response=JudgeResponse(), runs=[])
        judging.draw = lambda key: (1,)
        judging.span = lambda *a: None
        judging.timed = lambda *a, **k: None
        return judging

    first = judging_for("a")
    runner._time_on_chip(first)
    assert first.response.timing["reference"] == "measured"
    assert fit.reference_times and len(fit.reference_times["device"]) == 10
    second = judging_for("b")
    runner._time_on_chip(second)
    assert second.response.timing["reference"] == "reused"
    assert profilers[-1].calls["ref"] == 5
    assert leases == ["exclusive", "shared"] * 2
    assert summarize(second.response.timing)["speedup"] == pytest.approx(4.0, 0.01)
    # asked not to reuse (the final retiming of a search): measured again
    third = judging_for("c")
    third.request.timing["reuse_reference"] = 0
    runner._time_on_chip(third)
    assert third.response.timing["reference"] == "measured"


class LosingProfiler(ScheduledProfiler):
    """Loses the device events of the first ``lost`` traces' calls (as a TPU v5e's trace once
    lost 2 of 20)."""

    def __init__(self, ref, kernel, lost):
        super().__init__(ref, kernel)
        self.lost = lost

    def read(self, directory):
        planes = super().read(directory)
        if self.traces <= self.lost:
            planes[0]["lines"][1]["events"] = planes[0]["lines"][1]["events"][:-2]
        return planes


def test_a_trace_that_lost_calls_is_taken_once_more_before_the_wall_clock_stands_in():
    samples = _time(LosingProfiler(steady(2.0), steady(1.0), lost=1))
    assert samples["stopped"] == "interval" and "no device events" in samples[
        "trace_retried_because"]
    out = summarize(samples)
    assert out["timing_method"] == "device_trace" and out["trace_retried_because"]
    twice = _time(LosingProfiler(steady(2.0), steady(1.0), lost=2))
    assert "no device events" in twice["device"]["error"]  # the caller falls back
