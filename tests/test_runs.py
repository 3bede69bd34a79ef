"""Run directories: append-only events, resume without redoing work, secret commitment."""

import json
from pathlib import Path

import pytest

from jaxbench.contract import Settings
from jaxbench.runs import RunDir, RunError, read_events, verify_secret
from jaxbench.runs.jobs import Job, run_jobs

ONE_TRIAL = Settings.of(mode="interpret", size="small", trials=1)

SEEDS = Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/8p_gemm"


def test_resume_skips_finished_evaluations(tmp_path):
    config = {"command": "test"}
    jobs = [Job("8p_gemm", "seed", "gpu", SEEDS / "seed_gpu.py"),
            Job("8p_gemm", "seed", "tpu", SEEDS / "seed_tpu.py")]
    run = RunDir.open(tmp_path, config)
    first = run_jobs(jobs[:1], run, ONE_TRIAL, workers=1)
    assert [r.status for r in first] == ["correct"]
    # The process dies here (no run_end); a torn half-line is left behind.
    with open(tmp_path / "events.jsonl", "a") as f:
        f.write('{"type": "evaluation", "task": "8p_g')
    resumed = RunDir.open(tmp_path, config)
    assert resumed.secret != run.secret  # a resume is a new segment, with a fresh secret
    seen = []
    results = run_jobs(jobs, resumed, ONE_TRIAL.replace(tpu_interpret=False), workers=1,
                       on_result=lambda job, r: seen.append(job.target))
    assert sorted(r.target for r in results) == ["gpu", "tpu"]
    assert seen == ["gpu", "tpu"]  # the reused result is reported first, then the new one
    reused = next(r for r in results if r.target == "gpu")
    # read back from the run: every field as evaluated (the run adds the time it was recorded)
    assert {**reused.to_event(), "time": 0} == {**first[0].to_event(), "time": 0}
    assert (reused.extra["job"], reused.wall_s) == (first[0].extra["job"], first[0].wall_s)
    evaluations = [e for e in read_events(tmp_path) if e.get("type") == "evaluation"]
    assert sorted(e["target"] for e in evaluations) == ["gpu", "tpu"]  # gpu evaluated once


def test_resume_refuses_another_config(tmp_path):
    RunDir.open(tmp_path, {"a": 1, "tasks": "8p_gemm", "size": "small"})
    with pytest.raises(RunError, match="another configuration") as refused:
        RunDir.open(tmp_path, {"a": 1, "tasks": "12p_rmsnorm", "size": "small", "trials": 2})
    # the settings that differ are named, with both values; the ones that agree are not
    assert ('(tasks: "8p_gemm" there, "12p_rmsnorm" here; trials: null there, 2 here)'
            in str(refused.value)), str(refused.value)


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


def test_evaluated_sources_are_kept_content_addressed(tmp_path):
    run = RunDir.open(tmp_path, {"command": "test"})
    path = SEEDS / "seed_gpu.py"
    results = run_jobs([Job("8p_gemm", "seed", "gpu", path)], run, ONE_TRIAL, workers=1)
    kept = results[0].extra["source_file"]
    assert kept == f"sources/{results[0].source_sha256}.py"
    assert (tmp_path / kept).read_text() == path.read_text()
    assert run.keep_source(path.read_text()) == kept  # stored once per content


def _evaluation(task, step, status, speedup, source):
    return {"type": "evaluation", "task": task, "method": "best_of_n", "step": step,
            "status": status, "speedup": speedup, "source": source}


def test_best_never_holds_a_shipped_seed_unless_asked(tmp_path):
    """Evolve evaluates the shipped seeds as its starting points, and a model may answer
    with a seed verbatim: neither is what the search found, so neither goes to best/."""
    from jaxbench.contract import source_sha256
    from jaxbench.runs import best_evaluations, write_best
    from jaxbench.tasks import get_task

    seed = get_task("8p_gemm").kernel_files()[("seed", "tpu")].read_text()
    run = RunDir.open(tmp_path, {"command": "optimize"})
    for event in [
        _evaluation("8p_gemm", "seed/seed_tpu", "correct", 3.0, seed) | {"origin": "seed"},
        _evaluation("8p_gemm", "s0", "correct", 2.0, seed) | {"candidate_sha256": source_sha256(seed)},
        _evaluation("8p_gemm", "s1", "correct", 1.5, "F = 1\n"),
        _evaluation("12p_rmsnorm", "seed/seed_tpu", "correct", 1.1, "G = 1\n") | {"origin": "seed"},
    ]:
        run.append(event)
    assert {t: e["step"] for t, e in best_evaluations(tmp_path).items()} == {"8p_gemm": "s1"}
    assert sorted(write_best(tmp_path)) == ["8p_gemm"]
    assert (tmp_path / "best/8p_gemm.py").read_text() == "F = 1\n"
    assert not (tmp_path / "best/12p_rmsnorm.py").exists()
    asked = best_evaluations(tmp_path, include_seeds=True)
    assert {t: e["step"] for t, e in asked.items()} == {"8p_gemm": "seed/seed_tpu",
                                                         "12p_rmsnorm": "seed/seed_tpu"}


def test_write_best_exports_each_tasks_best_correct_kernel(tmp_path):
    from jaxbench.runs import best_evaluations, write_best

    run = RunDir.open(tmp_path, {"command": "optimize"})
    kept = run.keep_source("def kernel(x):\n    return x  # kept\n")
    for event in [
        _evaluation("8p_gemm", "s0", "correct", 1.2, "A = 1\n"),
        _evaluation("8p_gemm", "s1", "incorrect", 9.0, "B = 1\n"),
        _evaluation("8p_gemm", "s2", "correct", 2.5, "C = 1\n"),
        _evaluation("8p_gemm", "s3", "correct", 2.5, "D = 1\n"),  # a tie: the earlier stays
        _evaluation("12p_rmsnorm", "s0", "correct", None, None) | {"source_file": kept},
        _evaluation("13p_cross_entropy", "s0", "compile_error", None, "E = 1\n"),
    ]:
        run.append(event)
    assert {t: e["step"] for t, e in best_evaluations(tmp_path).items()} == {
        "8p_gemm": "s2", "12p_rmsnorm": "s0"}
    written = write_best(tmp_path)
    assert sorted(written) == ["12p_rmsnorm", "8p_gemm"]
    assert (tmp_path / "best/8p_gemm.py").read_text() == "C = 1\n"
    assert "# kept" in (tmp_path / "best/12p_rmsnorm.py").read_text()
    assert not (tmp_path / "best/13p_cross_entropy.py").exists()
    index = json.loads((tmp_path / "best/best.json").read_text())
    assert index["8p_gemm"]["step"] == "s2" and index["8p_gemm"]["speedup"] == 2.5


def test_a_run_records_its_plan_in_the_manifest(tmp_path):
    """run_jobs writes the planned job keys into the manifest (``plan``), atomically; a resume
    with the same config keeps it, and the report's missing evaluations come from it."""
    from jaxbench.report import summarize

    jobs = [Job("8p_gemm", "seed", "gpu", SEEDS / "seed_gpu.py"),
            Job("8p_gemm", "seed", "tpu", SEEDS / "seed_tpu.py")]
    config = {"command": "run"}
    run = RunDir.open(tmp_path, config, plan=[job.key for job in jobs])
    assert json.loads((tmp_path / "manifest.json").read_text())["plan"] == [j.key for j in jobs]
    run_jobs(jobs[:1], run, ONE_TRIAL, workers=1)  # a smaller plan replaces it
    assert json.loads((tmp_path / "manifest.json").read_text())["plan"] == [jobs[0].key]
    resumed = RunDir.open(tmp_path, config, plan=[job.key for job in jobs])
    assert resumed.plan == [j.key for j in jobs] and not (tmp_path / "manifest.json.tmp").exists()
    progress = summarize(tmp_path)["progress"]
    assert (progress["evaluations"], progress["planned"]) == (1, 2)
    assert progress["text"].startswith("incomplete: 1 of 2 evaluations")


def test_a_run_without_a_recorded_plan_still_reports(tmp_path):
    """A run directory from before plans were recorded: its report says the plan was not
    recorded and counts what its events show."""
    from jaxbench.report import summarize

    run = RunDir.open(tmp_path, {"command": "run", "kernels": "seed", "suite": "jaxbench",
                                 "tasks": None, "target": "all"})
    run.append({"type": "evaluation", "task": "8p_gemm", "status": "correct", "job": "k1"})
    assert "plan" not in json.loads((tmp_path / "manifest.json").read_text())
    progress = summarize(tmp_path)["progress"]
    assert (progress["evaluations"], progress["planned"]) == (1, None)
    assert "its plan was not recorded" in progress["text"]
    assert progress["text"].startswith("unfinished: no run_end")
