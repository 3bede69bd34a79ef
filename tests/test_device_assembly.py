"""Device-mode result assembly, on a CPU: the real parent and the real untrusted tracer, with the
trusted runner replaced by a stand-in that answers as a device runner does (outputs, float32
truths and raw timing samples). Every figure in the result must be the parent's own, computed
from those samples; a speedup above 10x must carry the review flag."""

import statistics
import threading
import time
from pathlib import Path

import pytest

from jaxbench.evaluator import SPEEDUP_REVIEW_THRESHOLD
from jaxbench.evaluator.parent.judge_client import RunnerOutcome
from jaxbench.tasks import get_task

TASK = "12p_rmsnorm"
SEED = get_task(TASK).kernel_files()[("seed", "tpu")]
DEVICE_KIND = "TPU v6e"


def _truths(task, size, labelled):
    """The float32 truths a device owner computes beside its trials."""
    import jax
    import numpy as np

    from jaxbench.evaluator.judge.runner import _inputs
    from jaxbench.tasks.spec import float32_reference

    fn = float32_reference(task)
    with jax.default_matmul_precision("highest"):
        return [(label, key, [np.asarray(x, np.float32) for x in
                              jax.tree_util.tree_leaves(fn(*_inputs(task, key, size)))])
                for label, key in labelled]


class FakeDeviceRunners:
    """Answers a judge request like a chip's owner: the reference's outputs (so the kernel is
    `correct`), the float32 truths, and the given timing samples; one request at a time, as
    one owner per chip does."""

    def __init__(self, timing, hold_s=0.0, fits=None, verdicts=None):
        self.timing = timing
        self.fits = fits
        self.verdicts = verdicts or {}  # label -> figures the owner sends instead of arrays
        self.requests = []
        self.hold_s = hold_s  # seconds each phase keeps the pretend device
        self.used = []  # (phase, start, end, request) as the pretend device saw it
        self._lock = threading.Lock()
        self._owner = threading.Lock()  # the one owner of the pretend chip
        self._serving = 0  # requests in the owner or waiting for it
        self.queued = 0  # requests that arrived while another was there

    def close(self):
        pass

    def prestart(self):
        self.prestarted = True

    def prepare(self, payload, timeout_s):
        self.prepared = payload  # the task's programs, asked for before the tracer's work

    def _use(self, phase, request):
        start = time.monotonic()
        time.sleep(self.hold_s)
        with self._lock:
            self.used.append((phase, start, time.monotonic(), request["dir"]))

    def run(self, request, timeout_s):
        with self._lock:  # another request arrived while the owner was busy: they overlapped
            self.queued += self._serving
            self._serving += 1
        try:
            with self._owner:
                return self._run(request)
        finally:
            with self._lock:
                self._serving -= 1

    def _run(self, request):
        import jax
        import numpy as np

        from jaxbench.evaluator.common.arrays import pack

        with self._lock:
            self.requests.append(request)
        self._use("compile", request)
        self._use("time", request)
        task, size = get_task(request["task"]), request["size"]
        labelled = [(f"trial{i}", k) for i, k in enumerate(request["trial_keys"])]
        labelled += [(f"recheck{i}", k) for i, k in enumerate(request["recheck_keys"])]
        truths = _truths(task, size, labelled)
        dtypes = [s.dtype for s in jax.tree_util.tree_leaves(task.output_shapes(size))]
        outputs = [(label, key, [np.asarray(x).astype(d) for x, d in zip(truth, dtypes, strict=True)])
                   for label, key, truth in truths]
        outputs = [run for run in outputs if run[0] not in self.verdicts]
        truths = [run for run in truths if run[0] not in self.verdicts]
        data, layout = pack(outputs)
        request_dir = Path(request["dir"])
        (request_dir / "outputs.npy").write_bytes(data)
        truth_data, truth_layout = pack(truths)
        (request_dir / "truth.npy").write_bytes(truth_data)
        return RunnerOutcome({"status": "ran", "trials": layout, "truth": truth_layout,
                              "device_kind": DEVICE_KIND, "backend": "tpu", "compile_s": 0.5,
                              "structure": {"kernel_calls": 1}, "timing": self.timing,
                              "fits": self.fits, "spans": {"kernel_compile": 0.5, "truth": 0.1},
                              "verdicts": self.verdicts,
                              "stages": {"correct": {"seconds": 0.1}, "time": {"seconds": 1.0}}})


def _samples(ref_ms, kernel_ms):
    """Raw per-call samples in seconds, with some spread."""
    jitter = [0.9, 1.0, 1.1, 1.0, 0.95, 1.05, 1.0, 1.2]
    return ([ref_ms * j / 1e3 for j in jitter], [kernel_ms * j / 1e3 for j in reversed(jitter)])


def _iqr(xs):
    quartiles = statistics.quantiles(xs, n=4)
    return quartiles[2] - quartiles[0]


@pytest.fixture(scope="module")
def device_evaluator():
    from jaxbench.evaluator import Evaluator

    with Evaluator(spares=0) as ev:
        yield ev


def _evaluate(ev, monkeypatch, timing, fits=None, verdicts=None):
    import jaxbench.evaluator.parent.case as parent_module

    monkeypatch.setattr(parent_module, "resolve_mode", lambda mode, target: "device")
    monkeypatch.setattr(parent_module, "device_kind", lambda: DEVICE_KIND)
    fake = FakeDeviceRunners(timing, fits=fits, verdicts=verdicts)
    monkeypatch.setattr(ev, "_owners", fake)
    result = ev.evaluate(SEED, TASK, mode="device", trials=2)
    assert len(fake.requests) == 1 and fake.requests[0]["mode"] == "device"
    assert len(fake.requests[0]["timing_keys"]) >= 2  # the parent asked for rotated input sets
    assert getattr(fake, "prestarted", False)  # the owner was started before the tracer's work
    assert fake.prepared == {"op": "prepare", "task": TASK, "task_file": None, "size": "small",
                             "xla_cache": True}  # and asked to compile the task's programs
    return result


def test_device_figures_come_from_the_samples_and_a_big_speedup_is_flagged(device_evaluator,
                                                                             monkeypatch):
    wall_ref, wall_kernel = _samples(3.0, 1.0)
    dev_ref, dev_kernel = _samples(2.4, 0.15)  # 16x on the device trace
    timing = {"ref_s": wall_ref, "kernel_s": wall_kernel, "input_sets": 3, "warmup_rounds": 4,
              "device": {"ref_s": dev_ref, "kernel_s": dev_kernel, "source": "XLA Ops",
                         "events": 16}}
    result = _evaluate(device_evaluator, monkeypatch, timing)
    assert result.status == "correct", result.message
    assert result.judged_on == "trusted_export" and result.mode == "device"
    assert result.timing_method == "device_trace"
    speedup = statistics.median(dev_ref) / statistics.median(dev_kernel)
    assert result.speedup == pytest.approx(speedup) and speedup > SPEEDUP_REVIEW_THRESHOLD
    assert result.t_ref_ms == pytest.approx(statistics.median(dev_ref) * 1e3)
    assert result.t_kernel_ms == pytest.approx(statistics.median(dev_kernel) * 1e3)
    assert result.review == (f"speedup {speedup:.1f}x exceeds 10x: check the kernel by hand")
    time = result.stages["time"]
    assert time["wall"]["speedup"] == pytest.approx(3.0)
    assert time["device"]["source"] == "XLA Ops" and time["device"]["events"] == 16
    assert time["reps"] == 8 and time["input_sets"] == 3 and time["warmup_rounds"] == 4
    assert time["t_kernel_iqr_ms"] == pytest.approx(_iqr(dev_kernel) * 1e3)
    assert time["spread"] == pytest.approx(max(_iqr(xs) / statistics.median(xs)
                                               for xs in (dev_ref, dev_kernel)))
    assert 0 < time["spread"] < 0.5
    assert result.peak_flops and result.roofline_fraction > 0
    assert result.device_kind == DEVICE_KIND


def test_a_modest_speedup_has_no_review_flag_and_wall_clock_stands_in(device_evaluator,
                                                                       monkeypatch):
    wall_ref, wall_kernel = _samples(2.0, 0.5)  # 4x, and no device trace
    timing = {"ref_s": wall_ref, "kernel_s": wall_kernel, "input_sets": 3, "warmup_rounds": 3,
              "device": {"error": "no device events in the trace"}}
    result = _evaluate(device_evaluator, monkeypatch, timing)
    assert result.status == "correct", result.message
    assert result.timing_method == "wall_clock_interleaved"
    assert result.speedup == pytest.approx(4.0)
    assert result.review is None
    assert result.stages["time"]["device_error"] == "no device events in the trace"



@pytest.mark.parametrize("target", ["gpu", "tpu"])
def test_a_device_mode_optimize_run_never_times_two_kernels_at_once(tmp_path, monkeypatch, target):
    """The driver lets several evaluations run at once on a device: tracing overlaps, and the
    chip's one owner does each request's device work alone, so the pretend chip sees no two
    requests' work overlap, on a TPU or a GPU."""
    from agent_fakes import script, seed

    import jaxbench.agents.driver as driver_module
    import jaxbench.evaluator.parent.case as parent_module
    from jaxbench.agents import get_method, optimize
    from jaxbench.evaluator import Evaluator
    from jaxbench.llm import get_model
    from jaxbench.runs import RunDir

    kind = {"gpu": "NVIDIA H200", "tpu": DEVICE_KIND}[target]
    for module in (parent_module, driver_module):
        monkeypatch.setattr(module, "resolve_mode", lambda mode, target: "device")
        monkeypatch.setattr(module, "device_kind", lambda: kind)
    wall_ref, wall_kernel = _samples(2.0, 1.0)
    fake = FakeDeviceRunners({"ref_s": wall_ref, "kernel_s": wall_kernel, "input_sets": 3,
                              "warmup_rounds": 3}, hold_s=0.3)
    source = seed(TASK, target)
    answers = [f"```python\n{source}\n# variant {i}\n```" for i in range(4)]
    model = get_model(script(tmp_path / "model", *answers))
    run = RunDir.open(tmp_path / "run", {"method": "best_of_n"})
    with Evaluator(spares=2, secret=run.secret) as ev:
        monkeypatch.setattr(ev, "_owners", fake)
        out = optimize([TASK], get_method("best_of_n"), model, run, budget=4, mode="device",
                       target=target, workers=4, evaluator=ev)
    assert [c.status for c in out[TASK]] == ["correct"] * 4, [c.result.message for c in out[TASK]]
    assert {c.result.mode for c in out[TASK]} == {"device"}
    # the winner, timed again with more repetitions: both figures kept, no extra sample
    from agent_fakes import events_of

    from jaxbench.agents.driver import RETIME_TIMING

    assert len(events_of(run, "evaluation")) == 4
    assert fake.requests[-1]["timing"] == RETIME_TIMING
    [retime] = events_of(run, "retime")
    [done] = events_of(run, "task_done")
    assert retime["status"] == "correct" and retime["timing"] == RETIME_TIMING
    assert retime["search_speedup"] == done["best_speedup"] == pytest.approx(2.0)
    assert done["best_speedup_retimed"] == retime["speedup"] == pytest.approx(2.0)
    assert retime["step"] == done["best_step"]
    used = fake.used
    assert len(used) == 10
    clashes = [(a, b) for a in used if a[0] == "time" for b in used
               if b is not a and a[1] < b[2] and b[1] < a[2]]
    assert clashes == []
    overlapping = [(a, b) for a in used for b in used if a[3] != b[3] and a[1] < b[2] and b[1] < a[2]]
    assert overlapping == []
    assert fake.queued >= 1  # the evaluations were in flight together (tracing overlapped)


def test_a_reference_that_does_not_fit_leaves_a_correct_kernel_correct_untimed(device_evaluator,
                                                                              monkeypatch):
    """The owner did not time a reference that does not fit the chip: the kernel's trials
    passed, so it is `correct`, with no speedup and the owner's reason as its message."""
    reason = ("the reference (XLA's program, the baseline) does not fit the chip at size "
              "'small': it needs 17.00 GiB of the chip's memory, which has 15.75 GiB")
    fits = {"reference": False, "reference_bytes": 17 * 2**30, "available_bytes": 16 * 2**30,
            "reason": reason, "truth_on": "chip, in slices of B=1"}
    result = _evaluate(device_evaluator, monkeypatch, None, fits=fits)
    assert result.status == "correct"
    assert result.speedup is None and result.t_ref_ms is None
    assert result.timing_method is None  # nothing was timed, by any method
    assert result.message == reason and result.fits == fits
    # the owner's own spans are the result's, beside the parent's
    assert result.spans["kernel_compile"] == 0.5 and result.spans["truth"] == 0.1
    assert result.spans["trace"] > 0


def test_trials_compared_on_the_chip_send_figures_not_arrays(device_evaluator, monkeypatch):
    """The owner compared every trial on the chip (judge/chip_verdict.py) and sent only the
    figures: the kernel is judged on them, and the worst figures are the result's."""
    figures = {"trial0": {"max_abs_err": 0.001, "rel_err": 0.0002, "tol_fraction": 0.1},
               "trial1": {"max_abs_err": 0.003, "rel_err": 0.0001, "tol_fraction": 0.4},
               "recheck0": {"max_abs_err": 0.002, "rel_err": 0.0003, "tol_fraction": 0.2}}
    result = _evaluate(device_evaluator, monkeypatch, None, verdicts=figures)
    assert result.status == "correct", result.message
    assert result.max_abs_err == 0.003 and result.rel_err == 0.0003
    assert result.tol_fraction == 0.4 and result.trials == 2


@pytest.mark.parametrize("figures", [
    {"max_abs_err": 0.5, "rel_err": 0.1, "tol_fraction": 1.5},  # not a pass
    {"max_abs_err": float("nan"), "rel_err": 0.1, "tol_fraction": 0.1},
    {"max_abs_err": 0.1, "tol_fraction": 0.1},
    "passed",
])
def test_a_malformed_chip_verdict_is_the_harness_fault_never_a_pass(device_evaluator,
                                                                     monkeypatch, figures):
    result = _evaluate(device_evaluator, monkeypatch, None, verdicts={"trial0": figures})
    assert result.status == "crashed" and result.rule == "harness"
    assert "chip verdict" in result.message


def test_chip_verdicts_count_only_in_device_mode():
    """A response naming trials compared on the chip, in interpret mode (where no chip
    compared anything), is the harness's fault: never a pass."""
    from types import SimpleNamespace

    from jaxbench.contract import JudgeResponse, StageFailure
    from jaxbench.evaluator.parent.requests import chip_decided

    said = JudgeResponse(verdicts={"trial0": {"max_abs_err": 0.0, "rel_err": 0.0,
                                              "tol_fraction": 0.0}})
    assert chip_decided(said, SimpleNamespace(mode="device"))["trial0"].ok
    with pytest.raises(StageFailure) as failed:
        chip_decided(said, SimpleNamespace(mode="interpret"))
    assert failed.value.status == "crashed" and "outside device mode" in failed.value.message
