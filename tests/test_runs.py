"""Run directories: append-only events, resume without redoing work, secret commitment."""

import json
from pathlib import Path

import pytest

from jaxbench.runner import Job, run_jobs
from jaxbench.runs import RunDir, RunError, read_events, verify_secret

SEEDS = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/p08_gemm"


def test_resume_skips_finished_evaluations(tmp_path):
    config = {"command": "test"}
    jobs = [Job("8p_gemm", "seed", "gpu", SEEDS / "seed_gpu.py"),
            Job("8p_gemm", "seed", "tpu", SEEDS / "seed_tpu.py")]
    run = RunDir.open(tmp_path, config)
    first = run_jobs(jobs[:1], run, size="small", mode="interpret", workers=1,
                     evaluate_options={"trials": 1})
    assert [r["status"] for r in first] == ["correct"]
    # The process dies here (no run_end); a torn half-line is left behind.
    with open(tmp_path / "events.jsonl", "a") as f:
        f.write('{"type": "evaluation", "task": "8p_g')
    resumed = RunDir.open(tmp_path, config)
    assert resumed.secret == run.secret
    seen = []
    results = run_jobs(jobs, resumed, size="small", mode="interpret", workers=1,
                       evaluate_options={"trials": 1, "tpu_interpret": False},
                       on_result=lambda job, r: seen.append(job.target))
    assert sorted(r["target"] for r in results) == ["gpu", "tpu"]
    evaluations = [e for e in read_events(tmp_path) if e.get("type") == "evaluation"]
    assert sorted(e["target"] for e in evaluations) == ["gpu", "tpu"]  # gpu evaluated once


def test_resume_refuses_another_config(tmp_path):
    RunDir.open(tmp_path, {"a": 1})
    with pytest.raises(RunError, match="another configuration"):
        RunDir.open(tmp_path, {"a": 2})


def test_secret_is_committed_then_revealed(tmp_path):
    run = RunDir.open(tmp_path, {"a": 1})
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert run.secret.hex() not in (tmp_path / "manifest.json").read_text()
    assert not verify_secret(tmp_path)
    run.finish()
    assert verify_secret(tmp_path)
    assert not (tmp_path / ".secret").exists()
    assert len(manifest["secret_sha256"]) == 64
    with pytest.raises(RunError, match="has ended"):
        RunDir.open(tmp_path, {"a": 1})
