"""Executors without a cluster: Ray resource requests per mode, modes and slots resolved against
what a cluster offers, the secret's repr, one-line usage errors (also without Ray installed)."""

import hashlib
import sys
import time

import pytest

from jaxbench.executors import ExecutorError, check_executor, cluster_slots, make_evaluator
from jaxbench.executors.ray import RunSecret, evaluation_slots, resolve_cluster_mode, resources_for

CPU_ONLY = {"gpus": 0.0, "cpus": 8.0, "tpu_hosts": 0, "tpu_chips_per_host": 0.0}
MIXED = {"gpus": 4.0, "cpus": 64.0, "tpu_hosts": 2, "tpu_chips_per_host": 4.0}


def test_resources_fit_the_mode():
    assert resources_for("interpret", "tpu", MIXED) == {"num_cpus": 1.0}
    assert resources_for("interpret", "gpu", MIXED, cpus_per_evaluation=2) == {"num_cpus": 2}
    assert resources_for("device", "gpu", MIXED) == {"num_cpus": 1, "num_gpus": 1}
    # a TPU evaluation takes every chip of one host
    assert resources_for("device", "tpu", MIXED) == {"num_cpus": 1, "resources": {"TPU": 4.0}}
    assert evaluation_slots("interpret", "tpu", MIXED) == 64
    assert evaluation_slots("device", "gpu", MIXED) == 4
    assert evaluation_slots("device", "tpu", MIXED) == 2


def test_modes_resolve_against_the_cluster():
    assert resolve_cluster_mode("auto", "gpu", MIXED) == "device"
    assert resolve_cluster_mode("auto", "tpu", CPU_ONLY) == "interpret"
    assert resolve_cluster_mode("interpret", "gpu", MIXED) == "interpret"
    with pytest.raises(RuntimeError, match="no node of the Ray cluster offers one"):
        resolve_cluster_mode("device", "tpu", CPU_ONLY)


def test_slots_for_a_run_of_several_targets():
    class Fake:
        def resolve_mode(self, mode, target):
            return resolve_cluster_mode(mode, target, MIXED)

        def slots(self, mode, target):
            return evaluation_slots(mode, target, MIXED)

    assert cluster_slots(Fake(), "auto", {"tpu", "gpu"}) == 4 + 2
    assert cluster_slots(Fake(), "interpret", {"tpu", "gpu"}) == 64  # CPUs shared, not doubled
    assert cluster_slots(object(), "auto", {"tpu"}) is None  # a local evaluator


def test_secret_repr_hides_it():
    secret = bytes(range(32))
    shown = repr(RunSecret(secret)) + str(RunSecret(secret))
    assert secret.hex() not in shown and secret.hex()[:12] not in shown
    assert hashlib.sha256(secret).hexdigest()[:12] in shown


def test_executor_usage_errors(monkeypatch):
    with pytest.raises(ExecutorError, match="--ray-address needs --executor ray"):
        check_executor("local", "127.0.0.1:6379", "auto", ["tpu"])
    with pytest.raises(ExecutorError, match="unknown executor"):
        make_evaluator("dask", b"x" * 32)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(ExecutorError, match=r"pip install -e '\.\[ray\]'"):
        check_executor("ray", None, "auto", ["tpu"])


def test_scratch_of_dead_ray_workers_is_swept(tmp_path):
    """Ray ends its workers with SIGKILL: the next worker on the host removes the temporary
    directories of workers that are gone, and only those."""
    import os
    import subprocess

    from jaxbench.evaluator.common.procs import process_start as _process_start
    from jaxbench.executors.ray import SCRATCH_PREFIX, _remove_if_orphaned

    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"{SCRATCH_PREFIX}{gone.pid}-x"
    reused = tmp_path / f"{SCRATCH_PREFIX}{os.getppid()}-y"  # a live pid, but another process
    alive = tmp_path / f"{SCRATCH_PREFIX}{os.getppid()}-z"
    for directory, owner in ((dead, "123"), (reused, "1"), (alive, _process_start(os.getppid()))):
        directory.mkdir()
        (directory / "owner").write_text(owner)
    for directory in (dead, reused, alive):
        _remove_if_orphaned(directory)
    assert not dead.exists() and not reused.exists() and alive.exists()


class _Cancelled(Exception):
    pass


class FakeRay:
    """What RayEvaluator calls: a task runs until it is cancelled, or for ``runs_s`` and then
    returns a result (it was never cancelled). ``on_submit`` runs as a task is submitted."""

    class exceptions:
        RayTaskError = type("RayTaskError", (Exception,), {})
        TaskCancelledError = _Cancelled
        RayError = Exception

    def __init__(self, runs_s=10.0, on_submit=lambda: None):
        import threading

        self.runs_s, self.on_submit = runs_s, on_submit
        self.inside, self.cancelled = threading.Event(), threading.Event()
        self.log: list[str] = []

    def is_initialized(self):
        return True

    def cancel(self, ref, force):
        self.log.append("cancel")
        self.cancelled.set()

    def get(self, ref):
        self.inside.set()
        if not self.cancelled.wait(self.runs_s):
            self.log.append("get returned a result")
            return {"status": "correct"}, {}
        time.sleep(0.3)  # a cancelled task's get returns a moment after the cancel
        self.log.append("get returned")
        raise _Cancelled()

    def shutdown(self):
        self.log.append("shutdown")

    def options(self, **_):  # the remote function
        return self

    def remote(self, *_):
        self.on_submit()
        return object()


def _fake_ray_evaluator(monkeypatch, ray):
    """A RayEvaluator (its fields as __init__ sets them) on ``ray``, the only one alive."""
    import threading

    from jaxbench.executors import ray as ray_executor

    evaluator = object.__new__(ray_executor.RayEvaluator)
    evaluator.ray, evaluator._remote, evaluator._secret_ref = ray, ray, None
    evaluator.max_retries, evaluator.cpus_per_evaluation = 0, 1.0
    evaluator._lock = threading.Lock()
    evaluator._in_flight, evaluator._aborted, evaluator._calls = set(), False, 0
    evaluator._left_ray = threading.Condition(evaluator._lock)
    evaluator._cluster = (time.monotonic() + 3600, {})
    monkeypatch.setattr(ray_executor, "_LIVE", [evaluator])
    monkeypatch.setattr(ray_executor, "resolve_cluster_mode", lambda mode, target, cluster: mode)
    monkeypatch.setattr(ray_executor, "resources_for", lambda *a, **k: {})
    monkeypatch.setitem(sys.modules, "ray", ray)
    return evaluator


def _evaluate_in_thread(evaluator):
    """Starts one evaluation on a thread; returns the thread and the list its error goes to."""
    import threading

    errors: list[Exception] = []

    def evaluate():
        try:
            evaluator.evaluate("TARGET = 'gpu'\ndef kernel(x):\n    return x\n", "8p_gemm",
                               mode="interpret")
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=evaluate)
    thread.start()
    return thread, errors


def test_a_stopping_driver_leaves_ray_only_after_its_evaluations_left_ray(monkeypatch):
    """Ctrl-C on a Ray run: the tasks are cancelled, and Ray is shut down only once no
    evaluation thread is inside a Ray call any more (a Ray call after ``ray.shutdown()`` makes
    Ray's core worker end the whole driver with status 1 instead of the 130 of a stop)."""
    from jaxbench.executors import ray as ray_executor

    ray = FakeRay()
    evaluator = _fake_ray_evaluator(monkeypatch, ray)
    thread, errors = _evaluate_in_thread(evaluator)
    assert ray.inside.wait(10)
    ray_executor.abort_all()
    thread.join(10)
    assert ray.log == ["cancel", "get returned", "shutdown"]
    assert [type(e).__name__ for e in errors] == ["EvaluationLost"]
    with pytest.raises(ray_executor.EvaluationLost, match="stopped before"):
        evaluator.evaluate("TARGET = 'gpu'\n", "8p_gemm")


def test_a_task_submitted_while_the_run_stops_is_cancelled_too(monkeypatch):
    """Ctrl-C between an evaluation's start and its task's listing (while Ray submits it): the
    stop did not see that task, so the evaluation cancels it itself instead of waiting for its
    verdict (a whole evaluation, past the driver's wait before it shuts Ray down)."""
    ray = FakeRay(runs_s=5.0)
    evaluator = _fake_ray_evaluator(monkeypatch, ray)
    ray.on_submit = evaluator.abort  # the stop lands while the task is being submitted
    thread, errors = _evaluate_in_thread(evaluator)
    thread.join(10)
    assert ray.log == ["cancel", "get returned"]
    assert [type(e).__name__ for e in errors] == ["EvaluationLost"]
