"""What the first GPU run depends on, checked without one: both GPU backends' detection (from
the kernel's compiler params, and from the exported module the judge reads), the race rule
for Mosaic GPU's sequential grid axes, and the shipped Mosaic GPU seeds' registration."""

import sys

import jax
import pytest

from jaxbench import compat
from jaxbench.backends import kernel_backend_of_calls
from jaxbench.evaluator.parent.static import declared_target
from jaxbench.tasks import get_task

MOSAIC_GPU_SEEDS = ("8p_gemm", "12p_rmsnorm", "1p_flash_attention")


def _kernel_eqns(path, task_id, size="small"):
    from jaxbench.evaluator.judge.exporting import scan

    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # trusted shipped kernels
    task = get_task(task_id)
    closed = jax.make_jaxpr(namespace["kernel"])(*task.input_specs(size))
    return closed, scan(closed).kernel_eqns


@pytest.mark.parametrize("task_id", ["8p_gemm", "12p_rmsnorm"])
def test_backend_detected_from_compiler_params(task_id):
    files = get_task(task_id).kernel_files()
    expected = {("seed", "gpu"): "triton", ("seed_mosaic", "gpu"): "mosaic_gpu",
                ("seed", "tpu"): "mosaic_tpu"}
    for key, backend in expected.items():
        _, eqns = _kernel_eqns(files[key], task_id)
        assert eqns and {compat.kernel_backend(e, key[1]) for e in eqns} == {backend}, key


def test_backend_of_params_older_forms_and_defaults():
    assert compat.backend_of_params({"triton": {"num_warps": 4}}) == "triton"
    assert compat.backend_of_params({"mosaic_gpu": {}}) == "mosaic_gpu"
    assert compat.backend_of_params({"mosaic": {}}) == "mosaic_tpu"
    assert compat.backend_of_params(None) is None
    # JAX 0.10+ lowers a GPU pallas_call without compiler params with Mosaic GPU by default.
    assert compat.default_gpu_backend() in ("mosaic_gpu", "triton")


def test_backend_from_the_exported_module():
    assert kernel_backend_of_calls({"__gpu$xla.gpu.triton": 2}) == "triton"
    assert kernel_backend_of_calls({"mosaic_gpu_v2": 1, "Sharding": 3}) == "mosaic_gpu"
    assert kernel_backend_of_calls({"tpu_custom_call": 1}) == "mosaic_tpu"
    assert kernel_backend_of_calls({"mosaic_gpu": 1, "__gpu$xla.gpu.triton": 1}) == \
        "mosaic_gpu+triton"
    assert kernel_backend_of_calls({"Sharding": 1}) is None


def test_mosaic_gpu_seeds_are_shipped_seeds():
    from jaxbench.runs.jobs import shipped_jobs

    for task_id in MOSAIC_GPU_SEEDS:
        task = get_task(task_id)
        path = task.kernel_files().get(("seed_mosaic", "gpu"))
        assert path is not None and path.name == "seed_mosaic_gpu.py", task_id
        assert declared_target(path.read_text()) == "gpu"
        # `--kernels seed` runs the seed_<target> files; `--kernels seed_mosaic` these
        assert {(j.kind, j.target) for j in shipped_jobs([task], "seed", ["gpu"])} == \
            {("seed", "gpu")}, task_id
        # plgpu.kernel seeds lower on JAX 0.10 to 0.12; the legacy pl.pallas_call ones on 0.10
        assert {(j.kind, j.target) for j in shipped_jobs([task], "seed_mosaic", ["gpu"])} == \
            {("seed_mosaic", "gpu")}, task_id
        assert {(j.kind, j.target) for j in shipped_jobs([task], "seed_mosaic_legacy", ["gpu"])} \
            == ({("seed_mosaic_legacy", "gpu")} if compat.mosaic_gpu_pallas_call() else set())


def test_mosaic_gpu_pallas_call_where_jax_no_longer_lowers_it(monkeypatch):
    """JAX 0.11 dropped Mosaic GPU params from pl.pallas_call's GPU lowering (a bare
    AssertionError there): the seeds are left out like a missing extra, and a Mosaic GPU
    kernel's lowering failure says why."""
    from jaxbench.evaluator.parent.static import wrong_target_hint
    from jaxbench.runs.jobs import kernel_unavailable, shipped_jobs

    monkeypatch.setattr(compat, "mosaic_gpu_pallas_call", lambda: False)
    assert kernel_unavailable("seed_mosaic_legacy") and not kernel_unavailable("seed")
    assert not kernel_unavailable("seed_mosaic")  # plgpu.kernel: every supported JAX
    assert shipped_jobs([get_task("12p_rmsnorm")], "seed_mosaic_legacy", ["gpu"]) == []
    source = get_task("12p_rmsnorm").kernel_files()[("seed_mosaic_legacy", "gpu")].read_text()
    assert "Mosaic GPU params lowered through pallas_call in JAX 0.10 only" in \
        wrong_target_hint(source, "gpu")
    triton = get_task("12p_rmsnorm").kernel_files()[("seed", "gpu")].read_text()
    assert wrong_target_hint(triton, "gpu") == ""
    monkeypatch.setattr(compat, "mosaic_gpu_pallas_call", lambda: True)
    assert wrong_target_hint(source, "gpu") == "" and not kernel_unavailable("seed_mosaic_legacy")


def test_race_rule_exempts_mosaic_gpu_sequential_axes_only():
    """The Mosaic GPU matmul accumulates along a "sequential" K axis: not a race. The same
    kernel with that axis declared "parallel" writes one output block from several programs
    at once, which the rule must still catch."""
    from jaxbench.evaluator.judge import exporting
    from jaxbench.evaluator.judge.gpu import race

    path = get_task("8p_gemm").kernel_files()[("seed_mosaic_legacy", "gpu")]
    closed, (eqn,) = _kernel_eqns(path, "8p_gemm")
    assert compat.sequential_grid_axes(eqn) == frozenset({2})
    assert race.parallel_write_conflict(closed) == ""

    racy = path.read_text().replace('"parallel", "parallel", "sequential"',
                                    '"parallel", "parallel", "parallel"')
    namespace: dict = {}
    exec(compile(racy, "racy.py", "exec"), namespace)
    task = get_task("8p_gemm")
    closed = jax.make_jaxpr(namespace["kernel"])(*task.input_specs("small"))
    assert compat.sequential_grid_axes(exporting.scan(closed).kernel_eqns[0]) == frozenset()
    assert "does not depend on grid axis 2" in race.parallel_write_conflict(closed)


# -- the prepared device check ------------------------------------------------------------------

REPO = __import__("pathlib").Path(__file__).parents[1]


def _script_env(**extra):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKS", "CHEATS", "BUDGET"))}
    env.update(JAX_PLATFORMS="cpu", PYTHON=sys.executable, **extra)  # this test's Python
    return env


def test_device_check_stops_at_once_without_a_gpu(tmp_path):
    import subprocess

    out = tmp_path / "out"
    done = subprocess.run(["bash", "scripts/device_check.sh", str(out)], cwd=REPO,
                          capture_output=True, text=True, env=_script_env(), timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "device_check: error: no NVIDIA GPU is visible to JAX on this host; run it on a GPU "
        "host, or pass --dry-run"]
    assert not out.exists()
    usage = subprocess.run(["bash", "scripts/device_check.sh"], cwd=REPO, capture_output=True,
                           text=True, env=_script_env(), timeout=60)
    assert usage.returncode == 2 and "give the output directory" in usage.stderr


def test_gpu_check_lists_every_gpu_kernel_priority_first():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "scripts/gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    jobs = gpu_check.jobs(None)
    # the Triton seed and the Mosaic GPU seed of each; the legacy ones on JAX 0.10 only
    per_task = 3 if compat.mosaic_gpu_pallas_call() else 2
    assert [j[0] for j in jobs[:3 * per_task]] == ["8p_gemm"] * per_task + \
        ["12p_rmsnorm"] * per_task + ["1p_flash_attention"] * per_task
    mosaic = {(t, "seed_mosaic") for t in MOSAIC_GPU_SEEDS}
    legacy = {(t, "seed_mosaic_legacy") for t in MOSAIC_GPU_SEEDS}
    assert {(j[0], j[1]) for j in jobs} >= mosaic
    assert ({(j[0], j[1]) for j in jobs} & legacy) == (legacy if per_task == 3 else set())
    from jaxbench.tasks import list_tasks

    expected = sum(1 for t in list_tasks() for (k, target) in t.kernel_files() if target == "gpu"
                   and not __import__("jaxbench.runs.jobs").runs.jobs.kernel_unavailable(k))
    assert len(jobs) == expected
    table = gpu_check.markdown([{"task": "8p_gemm", "kernel": "seed_mosaic",
                                 "backend": "mosaic_gpu", "t_ref_ms": 6.5, "t_kernel_ms": 3.25,
                                 "speedup": 2.0, "spread": 0.031, "timing_method": "device_trace",
                                 "status": "correct"}], "# head")
    assert "| 8p_gemm | seed_mosaic | mosaic_gpu | 6.500 | 3.250 | 2.00x | 3.1% | device_trace " \
           "| correct |" in table


def test_device_check_dry_run_writes_the_json_and_the_table(tmp_path):
    """The whole script on this CPU (interpret mode, small size, one task, no cheats): doctor,
    the timing-method comparison, both GPU backends' seeds, one JSON and one markdown table."""
    import json
    import subprocess

    out = tmp_path / "check"
    done = subprocess.run(["bash", "scripts/device_check.sh", "--dry-run", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env=_script_env(TASKS="12p_rmsnorm", CHEATS=""))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["mode"] == "interpret" and report["size"] == "small"
    rows = {(r["task"], r["kernel"]): r for r in report["results"]}
    legacy = compat.mosaic_gpu_pallas_call()  # the pallas_call Mosaic GPU seeds: JAX 0.10 only
    assert set(rows) == {("12p_rmsnorm", "seed"), ("12p_rmsnorm", "seed_mosaic")} | (
        {("12p_rmsnorm", "seed_mosaic_legacy")} if legacy else set())
    assert rows[("12p_rmsnorm", "seed")]["backend"] == "triton"
    # on a CPU nothing trusted runs a plgpu.kernel kernel: never `correct` there
    assert rows.pop(("12p_rmsnorm", "seed_mosaic"))["status"] == "unverified"
    assert all(r["status"] == "correct" for r in rows.values())
    table = (out / "gpu_check.md").read_text()
    assert "| task | kernel | backend | t_ref_ms | t_kernel_ms | speedup | spread |" in table
    assert "| 12p_rmsnorm | seed_mosaic | mosaic_gpu |" in table
    assert ("| 12p_rmsnorm | seed_mosaic_legacy | mosaic_gpu |" in table) == legacy
    doctor = json.loads((out / "doctor.json").read_text())
    assert doctor["versions"]["jax"] == jax.__version__
    assert doctor["backends"]["this process"] == ["cpu:0 cpu"]
    assert doctor["cross_lowering"]["cuda (Mosaic GPU)"].startswith("ok (mosaic_gpu")
    assert doctor["cross_lowering"]["cuda (Mosaic GPU, pallas_call)"].startswith(
        "ok (mosaic_gpu" if legacy else "unavailable: ")
    assert doctor["cross_lowering"]["cuda (Triton)"].startswith("ok (__gpu$xla.gpu.triton")
    assert doctor["profiler"].startswith("ok (host_hlo_ops")
    timing = json.loads((out / "timing_methods.json").read_text())
    assert [c["device"] for c in timing["cases"]] == ["host_hlo_ops"] * 2
