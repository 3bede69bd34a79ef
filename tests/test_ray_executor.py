"""The Ray executor on a real local Ray cluster (a head with no CPUs and two one-CPU worker
nodes, started here): the same verdicts as the local executor, node and worker deaths cost a
retry and never a verdict or an event, a killed driver resumes from the log, the secret stays
out of Ray's logs. Skipped where Ray is not installed (the `ray` extra; CI installs it)."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from jaxbench.executors import EvaluationLost  # noqa: E402
from jaxbench.executors.ray import RayEvaluator  # noqa: E402
from jaxbench.runs import RunDir, read_events  # noqa: E402
from jaxbench.runs.jobs import Job, run_jobs  # noqa: E402

ROOT = Path(__file__).parents[1]
GEMM = ROOT / "src/jaxbench/tasks/jaxbench/8p_gemm"
KERNELS = ROOT / "tests/kernels"
FAST = {"trials": 1, "tpu_interpret": False}  # one trial, no TPU-interpreter run: seconds each


SECRETS: list[bytes] = []  # every run secret the cluster saw (none may reach its logs)


@pytest.fixture(scope="module")
def cluster():
    import logging

    local = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0,  # the head only schedules; a dead node is noticed within seconds
        "_system_config": {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}})
    nodes = [local.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=local.address, logging_level=logging.WARNING, log_to_driver=False)
    local.wait_for_nodes()
    local.workers = nodes
    try:
        yield local
    finally:
        ray.shutdown()
        local.shutdown()
        # Ray notes a started cluster for `ray.init()`; a note naming this one would go stale
        record = Path("/tmp/ray/ray_current_cluster")
        if record.is_file() and record.read_text().strip() == local.address:
            record.unlink()


def _processes(prefix=b""):
    """(pid, parent pid) of the processes whose command line starts with ``prefix``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if cmdline.startswith(prefix):
            found.append((int(entry), ppid))
    return found


def _task_processes():
    """(pid, parent pid) of this process's clusters' Ray workers running an evaluation now: the
    clusters this file starts descend from it, and another pytest-xdist worker runs a cluster
    of its own at the same time."""
    running = _processes(b"ray::evaluate_on_node")
    parents, me = dict(_processes()), os.getpid()  # read after: each running one is in it

    def ours(pid):
        for _ in range(64):
            pid = parents.get(pid, 0)
            if pid == me:
                return True
            if pid <= 1:
                return False
        return False

    return [(pid, ppid) for pid, ppid in running if ours(pid)]


class Killer(threading.Thread):
    """Kills the first Ray worker seen running an evaluation (once), or calls ``act`` with it."""

    def __init__(self, act=None, after_s=0.5, timeout_s=120):
        super().__init__(daemon=True)
        self.act = act or (lambda pid, ppid: os.kill(pid, signal.SIGKILL))
        self.after_s, self.timeout_s = after_s, timeout_s
        self.victim = None

    def run(self):
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            running = _task_processes()
            if running:
                time.sleep(self.after_s)  # mid-evaluation: its tracer is working by now
                if running[0] in _task_processes():
                    self.victim = running[0]
                    self.act(*running[0])
                    return
            time.sleep(0.1)


def _evaluations(path):
    return [e for e in read_events(path) if e.get("type") == "evaluation"]


def test_same_verdicts_as_the_local_executor(cluster, tmp_path):
    from jaxbench.evaluator import Evaluator

    secret = os.urandom(32)
    SECRETS.append(secret)
    kernels = [GEMM / "seed_gpu.py", KERNELS / "wrong_math.py", KERNELS / "syntax_error.py",
               KERNELS / "hard_crash.py"]  # correct, incorrect, compile_error, crashed
    remote = RayEvaluator(secret)
    with Evaluator(secret=secret, spares=1) as local:
        for path in kernels:
            here = local.evaluate(path, "8p_gemm", mode="interpret", **FAST)
            there = remote.evaluate(path, "8p_gemm", mode="interpret", **FAST)
            assert (there.status, there.stage) == (here.status, here.stage), path.name
            # the same secret draws the same inputs: the very same error figures
            assert there.max_abs_err == here.max_abs_err, path.name
            assert there.kernel_file == here.kernel_file == str(path)
            assert there.ray_node
    # How the agents evaluate: source text, with the IR saved for feedback (--save-ir too): the
    # node's IR files arrive in the driver's directory.
    text = remote.evaluate((GEMM / "seed_tpu.py").read_text(), "8p_gemm", mode="interpret",
                           save_ir=tmp_path / "ir", **FAST)
    assert text.status == "correct" and text.kernel_file == "<kernel>"
    assert (tmp_path / "ir" / "jaxpr.txt").read_text().strip()
    assert text.artifacts["dir"] == str(tmp_path / "ir")
    with pytest.raises(KeyError, match="no size 'huge'"):  # the evaluator's own errors, as locally
        remote.evaluate(GEMM / "seed_gpu.py", "8p_gemm", mode="interpret", size="huge")


def test_killed_worker_costs_a_retry_not_a_verdict(cluster, tmp_path):
    run = RunDir.open(tmp_path, {"command": "test"})
    SECRETS.append(run.secret)
    jobs = [Job("8p_gemm", "seed", "gpu", GEMM / "seed_gpu.py"),
            Job("8p_gemm", "file", "tpu", KERNELS / "wrong_math.py")]
    killer = Killer()
    killer.start()
    from jaxbench.contract import Settings

    results = run_jobs(jobs, run, Settings.of(mode="interpret", size="small", **FAST), workers=0,
                       executor="ray")
    killer.join()
    assert killer.victim is not None, "no evaluation was seen running"
    assert sorted(r.status for r in results) == ["correct", "incorrect"]
    events = _evaluations(tmp_path)
    assert sorted(e["job"] for e in events) == sorted(j.key for j in jobs)  # one each, no duplicate
    assert not [e for e in read_events(tmp_path) if e.get("type") == "evaluation_lost"]


def test_no_retries_left_means_no_verdict_and_resume_evaluates_it(cluster, tmp_path, monkeypatch):
    """Through the command: the lost evaluation is logged, the run stays open, exit 1 with a
    resume hint; the same command then evaluates it."""
    from click.testing import CliRunner

    import jaxbench.executors.ray as ray_executor
    from jaxbench.cli import main

    out = tmp_path / "run"
    args = ["run", "--executor", "ray", "--ray-address", cluster.address, "--tasks", "8p_gemm",
            "--kernels", "seed", "--target", "gpu", "--mode", "interpret", "--trials", "1",
            "--out", str(out)]
    monkeypatch.setattr(ray_executor, "DEFAULT_MAX_RETRIES", 0)
    killer = Killer()
    killer.start()
    first = CliRunner().invoke(main, args)
    killer.join()
    assert killer.victim is not None
    assert first.exit_code == 1, first.output
    assert "1 of 1 evaluations got no verdict" in first.output
    assert "rerun the same command to resume" in first.output
    assert not (out / ".secret").exists()  # the run stays open; its secret is in memory only
    lost = [e for e in read_events(out) if e.get("type") == "evaluation_lost"]
    assert len(lost) == 1 and "died" in lost[0]["message"]
    assert _evaluations(out) == []
    monkeypatch.setattr(ray_executor, "DEFAULT_MAX_RETRIES", 3)
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert [e["job"] for e in _evaluations(out)] == [lost[0]["job"]]
    assert list(read_events(out))[-1]["type"] == "run_end"
    SECRETS.append(bytes.fromhex(list(read_events(out))[-1]["secret"]))  # the resume's, revealed


def test_lost_evaluation_raises_for_direct_callers(cluster):
    secret = os.urandom(32)
    SECRETS.append(secret)
    evaluator = RayEvaluator(secret, max_retries=0)
    killer = Killer()
    killer.start()
    with pytest.raises(EvaluationLost, match="died on each of 1 attempts"):
        evaluator.evaluate(GEMM / "seed_gpu.py", "8p_gemm", mode="interpret", **FAST)
    killer.join()


def test_driver_killed_mid_run_resumes_from_the_log(cluster, tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "jaxbench.cli", "run", "--executor", "ray", "--ray-address",
            cluster.address, "--tasks", "8p_gemm,12p_rmsnorm", "--kernels", "seed",
            "--target", "gpu", "--mode", "interpret", "--trials", "1", "--workers", "1",
            "--out", str(out)]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    driver = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and driver.poll() is None:
        if (out / "events.jsonl").exists() and _evaluations(out):
            break
        time.sleep(0.2)
    assert driver.poll() is None, driver.stderr.read().decode()[-2000:]
    driver.kill()  # SIGKILL: no handler, no cleanup; the log is all that is left
    driver.wait()
    jobs_before = _evaluations(out)
    done_before = {e["job"] for e in jobs_before}
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert done_before == {jobs_before[0]["job"]}  # one at a time: the second was in flight
    assert "1 of 2 evaluations are reused" in again.stderr
    events = list(read_events(out))
    jobs = [e["job"] for e in events if e.get("type") == "evaluation"]
    assert len(jobs) == len(set(jobs)) == 2 and done_before <= set(jobs)
    assert events[-1]["type"] == "run_end"


def test_ctrl_c_cancels_the_clusters_evaluations_and_keeps_the_run(cluster, tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "jaxbench.cli", "run", "--executor", "ray", "--ray-address",
            cluster.address, "--tasks", "8p_gemm", "--kernels", "seed", "--mode", "interpret",
            "--trials", "1", "--workers", "1", "--out", str(out)]
    driver = subprocess.Popen(args, env={**os.environ, "JAX_PLATFORMS": "cpu"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not _task_processes() and driver.poll() is None:
        time.sleep(0.1)
    assert _task_processes(), driver.stderr.read()[-2000:] if driver.poll() is not None else ""
    driver.send_signal(signal.SIGINT)
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 130, err[-2000:]
    assert "resume with:" in err and f"--out {out}" in err
    deadline = time.monotonic() + 30  # the cluster ends the stopped driver's evaluations
    while _task_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _task_processes()
    ends = [e for e in read_events(out) if e.get("type") == "run_end"]
    assert ends and ends[-1].get("interrupted") and ends[-1].get("secret")  # open for the resume
    SECRETS.append(bytes.fromhex(ends[-1]["secret"]))


def test_optimize_evaluates_on_the_cluster_and_calls_the_model_here(cluster, tmp_path):
    from click.testing import CliRunner

    from jaxbench.cli import main

    script = tmp_path / "script"  # a scripted model: the seed, then a kernel that cannot parse
    script.mkdir()
    (script / "00.txt").write_text(f"```python\n{(GEMM / 'seed_gpu.py').read_text()}\n```\n")
    (script / "01.txt").write_text("```python\nTARGET = 'gpu'\n\ndef kernel(a, b)\n    return a\n```\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "optimize", "--method", "best_of_n", "--model", f"scripted:{script}", "--tasks", "8p_gemm",
        "--budget", "2", "--mode", "interpret", "--trials", "1", "--target", "gpu", "--workers", "2",
        "--no-cache", "--executor", "ray", "--ray-address", cluster.address, "--out", str(out)])
    assert result.exit_code == 0, result.output
    events = list(read_events(out))
    evaluations = {e["step"]: e for e in events if e.get("type") == "evaluation"}
    assert sorted(e["status"] for e in evaluations.values()) == ["compile_error", "correct"]
    assert all(e.get("ray_node") for e in evaluations.values())  # judged on the cluster
    correct = next(e for e in evaluations.values() if e["status"] == "correct")
    assert correct["ir_facts"]["calls"]  # the IR feedback came back from the node
    assert len([e for e in events if e.get("type") == "llm_call"]) == 2


def test_validate_on_the_cluster_matches_local(cluster):
    from jaxbench.executors.ray import map_jobs as map_on_cluster
    from jaxbench.tasks import get_task
    from jaxbench.validation import validate_one, validate_task

    [remote] = map_on_cluster(validate_one, [("12p_rmsnorm", "small", 2)])
    local = validate_task(get_task("12p_rmsnorm"), size="small", seeds=2)
    assert remote.task == "12p_rmsnorm" and remote.flags == local.flags
    assert remote.tolerance.value == pytest.approx(local.tolerance.value)


def test_cli_device_mode_without_accelerators_is_a_usage_error(cluster, tmp_path):
    out = subprocess.run([sys.executable, "-m", "jaxbench.cli", "run", "--executor", "ray",
                          "--ray-address", cluster.address, "--tasks", "8p_gemm", "--kernels",
                          "seed", "--target", "gpu", "--mode", "device", "--out", str(tmp_path / "r")],
                         env={**os.environ, "JAX_PLATFORMS": "cpu"}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert "no node of the Ray cluster offers one" in out.stderr
    assert len(out.stderr.strip().splitlines()) <= 2  # (Ray may print one warning line)
    assert not (tmp_path / "r").exists()


# Last but one: it leaves the cluster one worker node short.
def test_node_death_mid_evaluation_retries_on_another_node(cluster):
    secret = os.urandom(32)
    SECRETS.append(secret)
    raylets = {node.all_processes["raylet"][0].process.pid: node for node in cluster.workers}
    dead = []

    def remove_node(pid, ppid):
        """The whole node dies: its raylet and every worker process it started."""
        node = raylets[ppid]  # the node whose raylet started this worker
        workers = [p for p, parent in _processes() if parent == ppid]
        dead.append(node.node_id)
        cluster.remove_node(node, allow_graceful=False)
        for worker in workers:
            try:
                os.kill(worker, signal.SIGKILL)
            except ProcessLookupError:
                pass

    killer = Killer(act=remove_node)
    killer.start()
    result = RayEvaluator(secret).evaluate(GEMM / "seed_gpu.py", "8p_gemm", mode="interpret", **FAST)
    killer.join()
    assert dead, "no evaluation was seen running"
    assert result.status == "correct"
    assert not result.ray_node.endswith("/" + dead[0][:8])  # it ran again elsewhere


def test_secret_never_reaches_rays_logs(cluster):
    if not SECRETS:  # the tests that evaluate on the cluster ran in another worker process (-n)
        secret = os.urandom(32)
        SECRETS.append(secret)
        RayEvaluator(secret).evaluate(GEMM / "seed_gpu.py", "8p_gemm", mode="interpret", **FAST)
    assert SECRETS
    session = Path(cluster.head_node.get_session_dir_path())
    needles = [s.hex().encode() for s in SECRETS] + list(SECRETS)
    for path in session.rglob("*"):
        if path.is_file() and "logs" in path.parts:
            data = path.read_bytes()
            assert not any(n in data for n in needles), path
