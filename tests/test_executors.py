"""Executors without a cluster: Ray resource requests per mode, modes and slots resolved against
what a cluster offers, the secret's repr, one-line usage errors (also without Ray installed)."""

import hashlib
import sys

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

    from jaxbench.executors.ray import SCRATCH_PREFIX, _process_start, _remove_if_orphaned

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

