"""The command line: output contracts, exit codes, one-line usage errors, run directories."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SEED = ROOT / "src/jaxbench/tasks/jaxbench/8p_gemm/seed_gpu.py"
RMSNORM_TPU = ROOT / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py"
BAD = ROOT / "tests/kernels/wrong_shape.py"


def jaxbench(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "jaxbench.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.mark.quick
def test_tasks_json_lists_known_tasks():
    out = jaxbench("tasks", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    ids = {r["id"] for r in rows}
    assert "8p_gemm" in ids
    gemm = next(r for r in rows if r["id"] == "8p_gemm")
    assert gemm["inputs"]["full"] == ["A: bfloat16[8192, 8192]", "B: bfloat16[8192, 28672]"]
    assert {"seed_tpu", "seed_gpu"} <= set(gemm["kernels"])


@pytest.mark.quick
def test_tasks_table_shows_the_size_asked_for():
    from click.testing import CliRunner

    from jaxbench.cli import main

    small = CliRunner().invoke(main, ["tasks", "--suite", "jaxbench", "--size", "small"],
                               env={"COLUMNS": "400"})
    assert small.exit_code == 0, small.output
    assert "inputs (small)" in small.output and "bfloat16[8192, 8192]" not in small.output
    full = CliRunner().invoke(main, ["tasks", "--suite", "jaxbench"], env={"COLUMNS": "400"})
    assert "inputs (full)" in full.output and "bfloat16[8192, 8192]" in full.output


@pytest.mark.quick
def test_eval_json_is_one_object_and_exit_0_when_correct():
    out = jaxbench("eval", SEED, "--task", "8p_gemm", "--json", "--trials", "2")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)  # exactly one JSON object, nothing else
    assert result["status"] == "correct" and result["target"] == "gpu"
    assert result["trials"] == 2


@pytest.mark.quick
def test_eval_exit_1_for_a_wrong_kernel():
    out = jaxbench("eval", BAD, "--task", "8p_gemm", "--json", "--trials", "1")
    assert out.returncode == 1
    assert json.loads(out.stdout)["status"] == "incorrect"


@pytest.mark.parametrize("args,words", [
    (["eval", SEED, "--task", "no_such_task"], "unknown task 'no_such_task'"),
    (["eval", "missing_kernel.py", "--task", "8p_gemm"], "does not exist"),
    (["eval", SEED], "give the task: --task ID (see `jaxbench tasks`) or --task-file FILE"),
    (["eval", SEED, "--task", "8p_gemm", "--size", "huge"], "huge"),
    (["run", "--kernels", "seed", "--tasks", "nope"], "unknown task 'nope'"),
    (["run", "--kernels", "not_a_dir"], "or a directory; 'not_a_dir' is none"),
    (["tasks", "--suite", "nope"], "unknown suite 'nope'"),
    (["eval", SEED, "--task", "8p"], "unknown task '8p' (did you mean 8p_gemm?)"),
    (["run", "--kernels", "seed", "--tasks", "12p_rmsnrom"], "did you mean 12p_rmsnorm"),
    (["eval", SEED, "--task", "8p_gemm", "--timeout", "-1"], "-1"),
    (["run", "--kernels", "seed", "--timeout", "0"], "0"),
    (["eval", SEED, "--task", "8p_gemm", "--target", "tpu"],
     "target tpu contradicts the kernel's TARGET"),
    (["eval", SEED, "--task", "8p_gemm", "--timing", "reps=3"], "NAME one of budget_s"),
    (["run", "--kernels", "seed", "--timing", "min_reps"], "give NAME=VALUE"),
    (["run", "--kernels", "seed", "--timing", "min_reps=many"], "'many' is not a number"),
    (["run", "--kernels", "seed", "--timing", "max_reps=0"], "a whole number >= 1"),
    (["run", "--kernels", "seed", "--timing", "min_reps=2.5"], "a whole number >= 1"),
    (["eval", SEED, "--task", "8p_gemm", "--timing", "budget_s=-1"], "budget_s must be >= 0"),
])
def test_usage_errors_are_one_line_with_exit_2(args, words):
    out = jaxbench(*args)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_run_writes_manifest_and_events(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "8p_gemm.py").write_text(SEED.read_text())
    (kernels / "notes.py").write_text("# a stray file: skipped with a note, the run goes on\n")
    out_dir = tmp_path / "run"
    out = jaxbench("run", "--kernels", kernels, "--out", out_dir, "--trials", "1",
                   env={"JAXBENCH_PROGRESS_INTERVAL": "1"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1/1 correct" in out.stdout
    # stderr is not a terminal here: plain progress lines, periodic while nothing finishes
    assert "evaluating (" in out.stderr and "[0/1] running (0 failed so far" in out.stderr
    assert "[1/1] 8p_gemm [file/gpu] correct (0 failed so far" in out.stderr
    assert "skipping notes.py (unknown task 'notes'" in out.stderr
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["config"]["kernels"] == str(kernels)
    assert len(manifest["secret_sha256"]) == 64
    events = [json.loads(line) for line in (out_dir / "events.jsonl").read_text().splitlines()]
    evaluations = [e for e in events if e["type"] == "evaluation"]
    assert [(e["task"], e["status"]) for e in evaluations] == [("8p_gemm", "correct")]
    assert events[-1]["type"] == "run_end"
    from jaxbench.runs import verify_secret

    assert verify_secret(out_dir)


def _kernels_with_symlinks(tmp_path):
    """A kernel directory holding a copy of the 12p_rmsnorm TPU seed and symlinks out of it:
    to a kernel file (8p_gemm.py) and to the directory holding it (linked/)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "8p_gemm.py").write_text(SEED.read_text())
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "12p_rmsnorm.py").write_text(RMSNORM_TPU.read_text())
    (kernels / "8p_gemm.py").symlink_to(outside / "8p_gemm.py")
    (kernels / "linked").symlink_to(outside, target_is_directory=True)
    return kernels, outside


def test_a_kernel_directory_never_follows_symlinks(tmp_path, monkeypatch):
    from jaxbench.runs import directory_jobs

    kernels, outside = _kernels_with_symlinks(tmp_path)
    (kernels / "1p_flash_attention.py").symlink_to(outside, target_is_directory=True)
    (kernels / "2p_gqa_attention.py").mkdir()  # named like a kernel, but not a file
    read = []
    for name in ("read_text", "read_bytes"):  # every way a file's content is read here
        method = getattr(Path, name)
        monkeypatch.setattr(Path, name, lambda self, *a, _m=method, **k: read.append(self) or
                            _m(self, *a, **k))
    skipped = []
    jobs = directory_jobs(kernels, None, ("tpu", "gpu"), skipped)
    assert [(j.task, j.path) for j in jobs] == [("12p_rmsnorm", kernels / "12p_rmsnorm.py")]
    assert skipped == ["1p_flash_attention.py (a symlink; symlinks are not followed)",
                       "2p_gqa_attention.py (not a regular file)",
                       "8p_gemm.py (a symlink; symlinks are not followed)"]
    assert read == [kernels / "12p_rmsnorm.py"]  # nothing read through a symlink


def test_run_skips_symlinked_kernels_with_a_note(tmp_path):
    kernels, outside = _kernels_with_symlinks(tmp_path)
    out_dir = tmp_path / "run"
    out = jaxbench("run", "--kernels", kernels, "--out", out_dir, "--trials", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1/1 correct" in out.stdout
    notes = [line for line in out.stderr.splitlines() if line.startswith("jaxbench: skipping")]
    assert notes == ["jaxbench: skipping 8p_gemm.py (a symlink; symlinks are not followed)"]
    events = [json.loads(line) for line in (out_dir / "events.jsonl").read_text().splitlines()]
    evaluated = [(e["task"], e["kernel_file"]) for e in events if e["type"] == "evaluation"]
    assert evaluated == [("12p_rmsnorm", str(kernels / "12p_rmsnorm.py"))]
    assert str(outside) not in (out_dir / "events.jsonl").read_text()


def test_run_directory_with_unknown_task_file_is_a_usage_error(tmp_path):
    (tmp_path / "no_such_task.py").write_text("def kernel(x):\n    return x\n")
    out = jaxbench("run", "--kernels", tmp_path)
    assert out.returncode == 2 and "unknown task 'no_such_task'" in out.stderr


def test_a_target_that_names_no_platform_is_a_usage_error(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text(SEED.read_text().replace('TARGET = "gpu"', 'TARGET = "cuda"'))
    out = jaxbench("eval", kernel, "--task", "8p_gemm")
    assert out.returncode == 2
    assert """TARGET = 'cuda' (line""" in out.stderr and 'is not "tpu" or "gpu"' in out.stderr


def test_plain_progress_lines_have_counts_failures_and_eta(monkeypatch):
    import io
    import time

    from jaxbench.cli.terminal import JobProgress

    monkeypatch.setenv("JAXBENCH_PROGRESS_INTERVAL", "0.2")
    stream = io.StringIO()
    with JobProgress(3, "evaluating", done=1, stream=stream) as progress:
        time.sleep(0.7)
        progress.advance("a correct", failed=False)
        progress.advance("b incorrect", failed=True)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "evaluating: 3 jobs, 1 reused from the run directory"
    assert lines[1].startswith("[1/3] running (0 failed so far,") and "ETA unknown" in lines[1]
    assert lines[-2].startswith("[2/3] a correct (0 failed so far,") and "ETA " in lines[-2]
    assert lines[-1].startswith("[3/3] b incorrect (1 failed so far,") and "ETA 0s" in lines[-1]


def test_save_ir_never_overwrites(tmp_path):
    (tmp_path / "old.txt").write_text("keep me")
    out = jaxbench("eval", SEED, "--task", "8p_gemm", "--save-ir", tmp_path)
    assert out.returncode == 2 and "already holds files" in out.stderr
    assert (tmp_path / "old.txt").read_text() == "keep me"


def test_documented_expert_limitation_is_reported_not_failed(tmp_path):
    out = jaxbench("run", "--kernels", "expert", "--tasks", "7p_ragged_paged_attention",
                   "--trials", "1", "--out", tmp_path / "run")
    assert out.returncode == 0, out.stdout + out.stderr
    # JAX 0.10's interpreters cannot run this expert (jobs.KNOWN_INTERPRET_FAILURES): it must
    # be reported as that documented limitation, and the run still succeed.
    assert ("known limitation, not a failure of this run: 7p_ragged_paged_attention expert/tpu"
            in out.stdout), out.stdout
    assert "0/1 correct (1 known limitation)" in out.stdout, out.stdout



def test_a_chip_not_of_the_target_is_a_usage_error():
    out = jaxbench("eval", SEED, "--task", "8p_gemm", "--chip", "v6e")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "unknown GPU chip 'v6e'; choose one of: NVIDIA H200, NVIDIA H100, NVIDIA A100" \
        in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_run_chip_needs_one_target_and_is_part_of_the_run_config(tmp_path):
    out = jaxbench("run", "--tasks", "l1_matmul", "--kernels", "seed", "--chip", "A100",
                   "--out", tmp_path / "r")
    assert out.returncode == 2 and "add --target tpu or --target gpu" in out.stderr
    out = jaxbench("run", "--tasks", "l1_matmul", "--kernels", "seed", "--target", "gpu",
                   "--chip", "h200", "--trials", "1", "--out", tmp_path / "r")
    assert out.returncode == 0, out.stdout + out.stderr
    events = [json.loads(line) for line in (tmp_path / "r" / "events.jsonl").read_text().splitlines()]
    assert [e["chip"] for e in events if e["type"] == "evaluation"] == ["NVIDIA H200"]
    out = jaxbench("run", "--tasks", "l1_matmul", "--kernels", "seed", "--target", "gpu",
                   "--trials", "1", "--out", tmp_path / "r")  # the suite's A100 is another run
    assert out.returncode == 2 and 'chip: "NVIDIA H200" there, null here' in out.stderr


def test_run_timing_options_are_part_of_the_run_config(tmp_path):
    """--timing reaches the run's settings and config: a resume under other options is refused
    (a run's speedups are measured one way)."""
    args = ["run", "--tasks", "l1_matmul", "--kernels", "seed", "--target", "gpu", "--trials",
            "1", "--out", tmp_path / "r"]
    out = jaxbench(*args, "--timing", "min_reps=20", "--timing", "reuse_reference=0")
    assert out.returncode == 0, out.stdout + out.stderr
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["config"]["timing"] == {"min_reps": 20, "reuse_reference": 0}
    out = jaxbench(*args)
    assert out.returncode == 2 and "timing" in out.stderr, out.stderr
