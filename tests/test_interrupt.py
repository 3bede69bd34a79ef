"""Ctrl-C and kills, with real signals on real commands: a stopped run keeps what finished and
says how to resume; no worker process outlives the command, however the command dies."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from signal_helpers import alive, children, cpu_seconds, stop, wait_for

ROOT = Path(__file__).parents[1]
ENDLESS = ROOT / "tests/adversarial/kernels/endless_kernel_loop.py"  # spins in the runner
RMSNORM = ROOT / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_gpu.py"


def _start(args, tmp_path, **kwargs):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "jaxbench.cli", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _busy_runner(pid):
    """The command's trusted runner, once it is running the endless kernel."""
    runners = [p for p, cmd in children(pid) if "judge.runner" in cmd]
    return runners[0] if runners else None


def test_ctrl_c_stops_a_run_keeps_finished_results_and_says_how_to_resume(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "8p_gemm.py").write_text(ENDLESS.read_text())
    (kernels / "12p_rmsnorm.py").write_text(RMSNORM.read_text())
    out_dir = tmp_path / "run"
    proc = _start(["run", "--kernels", kernels, "--out", out_dir, "--workers", "2",
                   "--trials", "1", "--timeout", "600"], tmp_path)
    try:
        events = out_dir / "events.jsonl"
        wait_for(lambda: events.exists() and '"evaluation"' in events.read_text(), 240,
                 "the first result")
        workers = [p for p, _ in children(proc.pid)]
        assert workers, "no worker processes to stop"
        stderr, _, stopped_in = stop(proc, signal.SIGINT, timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert stopped_in < 20, f"the first Ctrl-C took {stopped_in:.0f} s"
    assert "interrupted by SIGINT: 1 of 2 evaluations are done" in stderr
    assert "resume with:" in stderr and f"--out {out_dir}" in stderr
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    evaluations = [e for e in lines if e["type"] == "evaluation"]
    assert [(e["task"], e["status"]) for e in evaluations] == [("12p_rmsnorm", "correct")]
    end = lines[-1]  # an interrupted run_end with the command that resumes, revealing its secret
    assert end["type"] == "run_end" and end["interrupted"] is True
    from jaxbench.runs import verify_secret

    assert verify_secret(out_dir)  # the secret it reveals matches the manifest's commitment
    assert end["signal"] == "SIGINT" and end["evaluations"] == 1 and f"--out {out_dir}" in end["resume"]
    assert not (out_dir / ".secret").exists()  # nothing secret on disk; resumable all the same
    report = subprocess.run([sys.executable, "-m", "jaxbench.cli", "report", str(out_dir)],
                            capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
    assert f"resume with: {end['resume']}" in " ".join(report.stdout.split()), report.stdout
    wait_for(lambda: not any(alive(p) for p in workers), 10, "the workers to die")
    assert not list((tmp_path / "tmp").glob("jaxbench-tracer-*")), "temporary files left"
    # Resumed without the endless kernel: the finished result is reused, and the run says so.
    (kernels / "8p_gemm.py").unlink()
    resumed = _start(["run", "--kernels", kernels, "--out", out_dir, "--workers", "2",
                      "--trials", "1", "--timeout", "600"], tmp_path)
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert f"resuming {out_dir}: 1 of 1 evaluations are reused from it; nothing left to run" in stderr
    assert "1/1 correct" in stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_no_worker_outlives_a_killed_eval(tmp_path, sig):
    """`jaxbench eval` on a kernel that loops forever in the runner, killed the way `timeout`
    (SIGTERM) or the OOM killer (SIGKILL) kills it: its tracer and runner go with it."""
    proc = _start(["eval", ENDLESS, "--task", "8p_gemm", "--trials", "1", "--timeout", "600",
                   "--no-tpu-interpret"], tmp_path)
    try:
        wait_for(lambda: _busy_runner(proc.pid) is not None, 240, "the runner")
        # No fixed sleep: wait until the runner is spinning in the kernel's loop (its CPU time
        # grows by seconds after the tracer is gone), however slow the machine.
        wait_for(lambda: not any("sandbox.tracer" in cmd for _, cmd in children(proc.pid)),
                 240, "the tracer to finish")
        runner = _busy_runner(proc.pid)
        busy_from = cpu_seconds(runner)
        wait_for(lambda: cpu_seconds(runner) > busy_from + 2, 240, "the runner to spin")
        workers = [p for p, _ in children(proc.pid)]
        stop(proc, sig, timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == (143 if sig == signal.SIGTERM else -signal.SIGKILL)
    wait_for(lambda: not any(alive(p) for p in workers), 20, "the workers to die")


STOP_SCRIPT = """
import sys, time
from jaxbench.cli.terminal import StopSignals
with StopSignals(on_stop=lambda: time.sleep(1000), grace_s=1000, message="stopping") as stop:
    print("ready", flush=True)
    while True:  # a command that never finishes its stop by itself
        sum(range(100000))
"""


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_second_signal_exits_at_once(sig, code):
    proc = subprocess.Popen([sys.executable, "-c", STOP_SCRIPT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(sig)
        time.sleep(1.5)
        assert proc.poll() is None, "the first signal must only start the stop"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == code
    assert "stopping" in stderr


def test_no_signal_watcher_outlives_its_block():
    """A watcher thread still alive at interpreter exit drops the last reference to what
    ``on_stop`` holds (an evaluator with cached JAX arrays) while Python finalizes; jaxlib
    then aborts the process ("FATAL: exception not rethrown", seen as exit -6 in CI)."""
    import threading

    from jaxbench.cli.terminal import StopSignals

    class Holder:
        def abort(self) -> None:
            pass

    holder = Holder()
    with StopSignals(on_stop=holder.abort) as stop:
        assert any(t.name == "jaxbench-signals" for t in threading.enumerate())
    assert not any(t.name == "jaxbench-signals" for t in threading.enumerate())
    assert stop.on_stop is None  # the evaluator is not kept alive by the finished block


def test_a_resumed_run_says_what_it_reuses():
    from jaxbench.cli.run import resuming_line

    assert resuming_line(Path("runs/a"), 0, 4) == \
        "jaxbench: resuming runs/a: none of its 4 evaluations had finished; all 4 run now"
    assert resuming_line(Path("runs/a"), 3, 4) == \
        "jaxbench: resuming runs/a: 3 of 4 evaluations are reused from it; 1 to run"
