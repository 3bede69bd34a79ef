"""Device-side timing without a device: the trace parsing on real CPU traces and on
GPU/TPU-shaped planes, and the statistics with a fake clock."""

import contextlib

import jax
import jax.numpy as jnp
import pytest

from jaxbench.evaluator.judge import timing
from jaxbench.evaluator.judge.timing import (
    ANNOTATION,
    device_times,
    time_device,
    time_interleaved,
    warm_up,
)
from jaxbench.evaluator.parent.figures import summarize


def _window(label, start, duration):
    return (f"{ANNOTATION}:{label}", start, duration, {})


def _gpu_planes(kernels_by_call, offset=0.0, run_ids=False):
    """A host plane with the timed ranges and a GPU plane with one stream line of kernels
    (plus an "XLA Modules" summary line that must not be counted)."""
    windows, kernels, modules = [], [], []
    t = 1_000.0
    for i, (label, durations) in enumerate(kernels_by_call):
        windows.append(_window(label, t, 10_000.0))
        k = t + 100.0
        for d in durations:
            stats = {"hlo_module": "jit_x", "run_id": 7 + i} if run_ids else {"hlo_module": "jit_x"}
            kernels.append(("fusion", k + offset, d, stats))
            k += d + 50.0
        modules.append(("jit_x", t + 100.0 + offset, k - t - 100.0, {}))
        t += 20_000.0
    return [
        {"name": "/host:CPU", "lines": [{"name": "python", "events": windows}]},
        {"name": "/device:GPU:0", "lines": [
            {"name": "XLA Modules", "events": modules},
            {"name": "Stream #13(Compute)", "events": kernels}]},
    ]


def test_gpu_kernels_are_summed_per_call_and_summary_lines_ignored():
    planes = _gpu_planes([("ref:0", [1000.0, 2000.0]), ("kernel:0", [500.0]),
                          ("kernel:1", [400.0, 100.0]), ("ref:1", [3000.0])])
    found = device_times(planes)
    assert found["source"] == "device" and found["events"] == 6
    assert found["calls"] == {f"{ANNOTATION}:ref:0": 3e-6, f"{ANNOTATION}:kernel:0": 5e-7,
                              f"{ANNOTATION}:kernel:1": 5e-7, f"{ANNOTATION}:ref:1": 3e-6}


def test_unaligned_device_clock_falls_back_to_run_ids_in_order():
    calls = [("ref:0", [1000.0]), ("kernel:0", [200.0, 300.0]), ("kernel:1", [700.0]),
             ("ref:1", [900.0])]
    found = device_times(_gpu_planes(calls, offset=5e9, run_ids=True))
    assert "run id" in found["source"]
    assert found["calls"][f"{ANNOTATION}:kernel:0"] == pytest.approx(5e-7)
    assert found["calls"][f"{ANNOTATION}:ref:1"] == pytest.approx(9e-7)
    # without run ids nothing can be matched: no call gets a figure
    assert device_times(_gpu_planes(calls, offset=5e9))["calls"] == {}


def test_tpu_xla_ops_line_is_used_when_present():
    planes = [{"name": "/host:CPU", "lines": [{"name": "python", "events": [
        _window("ref:0", 0.0, 5000.0), _window("kernel:0", 6000.0, 5000.0)]}]},
              {"name": "/device:TPU:0", "lines": [
                  {"name": "XLA Modules", "events": [("jit_a", 100.0, 4000.0, {})]},
                  {"name": "XLA Ops", "events": [("fusion.1", 100.0, 1500.0, {}),
                                                 ("fusion.2", 1700.0, 500.0, {}),
                                                 ("copy", 6100.0, 800.0, {})]}]}]
    found = device_times(planes)
    assert found["calls"] == {f"{ANNOTATION}:ref:0": 2e-6, f"{ANNOTATION}:kernel:0": 8e-7}


def test_nested_host_events_count_once():
    """XLA's CPU thunks nest (a loop thunk around its body): only the outer one counts."""
    planes = [{"name": "/host:CPU", "lines": [
        {"name": "python", "events": [_window("ref:0", 0.0, 10_000.0)]},
        {"name": "XLAEigen", "events": [("while", 100.0, 5000.0, {"hlo_op": "while"}),
                                        ("fusion", 200.0, 1000.0, {"hlo_op": "fusion"}),
                                        ("other", 6000.0, 1000.0, {"no": 1})]}]}]
    found = device_times(planes)
    assert found["source"] == "host_hlo_ops"
    assert found["calls"] == {f"{ANNOTATION}:ref:0": 5e-6}


def test_device_time_from_a_real_cpu_trace():
    """JAX's own profiler on this CPU: every timed call gets a device time, and a tiny op's
    device time is far below its wall-clock time per call (dispatch overhead)."""
    big = jax.jit(lambda x: jnp.sin(x) @ jnp.cos(x).T)
    tiny = jax.jit(lambda x: x[:8] * 2)
    sets = [(jnp.full((256, 256), float(i)),) for i in range(2)]
    jax.block_until_ready((big(*sets[0]), tiny(*sets[0])))
    device = time_device(big, tiny, sets, reps=4)
    assert "error" not in device, device
    assert len(device["ref_s"]) == len(device["kernel_s"]) == 4
    assert device["source"] == "host_hlo_ops" and device["events"] >= 8
    import time

    samples = time_interleaved(big, tiny, sets, perf_counter=time.perf_counter, warmup=1,
                               min_reps=4, max_reps=4, budget_s=0)
    samples["device"] = device
    out = summarize(samples)
    assert out["timing_method"] == "device_trace" and out["speedup"] > 1
    assert out["device"]["t_kernel_ms"] < out["wall"]["t_kernel_ms"]


class _NoProfiler(timing.Profiler):
    def trace(self, directory):
        raise RuntimeError("profiler unavailable")


def test_no_trace_means_wall_clock_with_the_reason_recorded():
    fn = jax.jit(lambda x: x + 1)
    device = time_device(fn, fn, [(jnp.ones(4),)], reps=2, profiler=_NoProfiler())
    assert "profiler unavailable" in device["error"]
    out = summarize({"ref_s": [2e-3, 2e-3, 2e-3, 2e-3], "kernel_s": [1e-3] * 4, "input_sets": 1,
                     "device": device})
    assert out["timing_method"] == "wall_clock_interleaved" and out["speedup"] == 2.0
    assert "profiler unavailable" in out["device_error"]


class _EmptyProfiler(timing.Profiler):
    """A trace that records the ranges but no device events."""

    def trace(self, directory):
        return contextlib.nullcontext()

    def annotate(self, name):
        self.names.append(name)
        return contextlib.nullcontext()

    def read(self, directory):
        return [{"name": "/host:CPU", "lines": [{"name": "python", "events": [
            _window(n.split(":", 1)[1], i * 100.0, 50.0) for i, n in enumerate(self.names)]}]}]


def test_calls_without_device_events_are_an_error_not_zero():
    profiler = _EmptyProfiler()
    profiler.names = []
    fn = jax.jit(lambda x: x + 1)
    device = time_device(fn, fn, [(jnp.ones(4),)], reps=2, profiler=profiler)
    assert device["error"].startswith("no device events inside 4 of 4 timed calls")


class FakeClock:
    """Time advances only when a timed function runs: each call costs what its schedule says."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def function(self, costs):
        costs = iter(costs)

        def fn(x):
            self.now += next(costs)
            return x
        return fn


def test_warm_up_runs_until_three_rounds_agree():
    clock = FakeClock()
    # compile-like first calls, then settling: rounds of 10, 5, 3, 2.05, 2, 2 (ref + kernel)
    ref = clock.function([9, 4, 2, 1.05, 1, 1, 1, 1])
    cand = clock.function([1, 1, 1, 1, 1, 1, 1, 1])
    rounds = warm_up(ref, cand, [(0,)], perf_counter=clock, rounds=2, max_rounds=8, tolerance=0.1,
                     budget_s=1e9)
    assert rounds == 6  # 3.0, 2.05, 2.0 differ by 50 %; 2.05, 2.0, 2.0 by 2.5 %
    clock = FakeClock()
    never = clock.function([1, 3] * 10)
    assert warm_up(never, clock.function([0] * 20), [(0,)], perf_counter=clock, rounds=1,
                   max_rounds=5, budget_s=1e9) == 5
    # past the time budget it stops as soon as the minimum rounds are done
    assert warm_up(clock.function([1, 3] * 10), clock.function([0] * 20), [(0,)],
                   perf_counter=clock, rounds=2, max_rounds=9, budget_s=0.5) == 2
    assert warm_up(never, never, [(0,)], perf_counter=clock, rounds=0) == 0


def test_statistics_with_a_fake_clock():
    clock = FakeClock()
    ref = clock.function([4.0] * 100)
    cand = clock.function([1.0, 1.0, 1.0, 3.0] * 25)
    samples = time_interleaved(ref, cand, [(0,), (1,)], perf_counter=clock, warmup=0, min_reps=8,
                               max_reps=8, budget_s=0)
    assert samples["ref_s"] == [4.0] * 8 and samples["warmup_rounds"] == 0
    out = summarize(samples)
    assert out["timing_method"] == "wall_clock_interleaved"
    assert out["t_ref_ms"] == 4000.0 and out["t_kernel_ms"] == 1000.0 and out["speedup"] == 4.0
    assert out["t_ref_iqr_ms"] == 0.0 and out["t_kernel_iqr_ms"] == pytest.approx(1500.0)
    assert out["spread"] == pytest.approx(1.5)  # the kernel's IQR over its median
    with pytest.raises(ValueError, match="unpaired"):
        summarize({"ref_s": [1.0], "kernel_s": []})
    with pytest.raises(ValueError, match="negative"):
        summarize({"ref_s": [1.0], "kernel_s": [-1.0]})
