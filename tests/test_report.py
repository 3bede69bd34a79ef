"""``jaxbench report``: per-task bests and per-method metrics from hand-made run events."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from jaxbench.cli import main
from jaxbench.report.summary import cost_text, summarize
from jaxbench.runs import RunDir


def _evaluation(task, method, sample, status, speedup=None, stage=None, mode="device", **extra):
    return {"type": "evaluation", "task": task, "method": method, "step": f"s{sample}",
            "sample": sample, "status": status, "stage": stage or ("correct" if status in
                                                                   ("correct", "incorrect") else "lower"),
            "speedup": speedup, "mode": mode, **extra}


@pytest.fixture
def device_run(tmp_path):
    run = RunDir.open(tmp_path / "run", {"command": "optimize", "budget": 8})
    events = [
        # best_of_n: gemm beats XLA at sample 2; rmsnorm correct but slower.
        _evaluation("8p_gemm", "best_of_n", 1, "correct", 0.9),
        _evaluation("8p_gemm", "best_of_n", 0, "compile_error"),
        _evaluation("8p_gemm", "best_of_n", 2, "correct", 2.5),
        _evaluation("12p_rmsnorm", "best_of_n", 0, "incorrect"),
        _evaluation("12p_rmsnorm", "best_of_n", 1, "correct", 0.5),
        # evolve: its seed is not a sample; gemm fast at once; rmsnorm never correct.
        _evaluation("8p_gemm", "evolve", None, "correct", 1.0, origin="seed"),
        _evaluation("8p_gemm", "evolve", 0, "correct", 1.2),
        _evaluation("12p_rmsnorm", "evolve", 0, "runtime_error", stage="correct"),
        {"type": "llm_call", "task": "8p_gemm", "method": "best_of_n", "input_tokens": 100,
         "output_tokens": 10, "cost": 0.5},
        {"type": "llm_call", "task": "8p_gemm", "method": "best_of_n", "input_tokens": 5,
         "output_tokens": 1, "cost": None},
        {"type": "llm_call", "task": "8p_gemm", "method": "evolve", "cost": None},
        {"type": "task_done", "task": "8p_gemm", "method": "evolve", "samples": 1, "seeded": True},
    ]
    for event in events:
        run.append(event)
    return run.path


def test_summary_per_method(device_run):
    summary = summarize(device_run)
    assert summary["timed"] and summary["note"] is None
    bon, evolve = summary["methods"]["best_of_n"], summary["methods"]["evolve"]
    assert bon["samples"] == 5 and evolve["samples"] == 2  # the seed is no sample
    assert bon["compile_rate"] == 0.8 and bon["correct_rate"] == 0.6
    assert evolve["compile_rate"] == 1.0 and evolve["correct_rate"] == 0.5
    assert list(bon["fast_1_at"]) == ["1", "8"]  # N up to the budget (8)
    # Samples in slot order: gemm = [compile_error, 0.9, 2.5], rmsnorm = [incorrect, 0.5].
    # Best-of-N draws independent samples: @k is the unbiased pass@k over all of a task's
    # samples (gemm: 2 of 3 correct, 1 of 3 beats XLA; rmsnorm: 1 of 2 correct, none beats it).
    assert bon["at_k"].startswith("unbiased pass@k")
    assert bon["fast_1_at"] == pytest.approx({"1": (1 / 3 + 0) / 2, "8": 0.5})
    assert bon["fast_0_at"] == pytest.approx({"1": (2 / 3 + 1 / 2) / 2, "8": 1.0})
    assert bon["correct_at"] == pytest.approx({"1": (2 / 3 + 1 / 2) / 2, "8": 1.0})
    assert evolve["at_k"].startswith("within the first N samples")  # a trajectory
    assert bon["geomean_speedup"] == pytest.approx(math.sqrt(2.5))
    assert bon["geomean_speedup_unfloored"] == pytest.approx(math.sqrt(2.5 * 0.5))
    assert evolve["fast_1_at"]["1"] == 0.5
    assert evolve["geomean_speedup"] == pytest.approx(math.sqrt(1.2))
    assert bon["llm"]["calls"] == 2 and bon["llm"]["cost"] == 0.5
    assert bon["llm"]["calls_without_cost"] == 1


def test_summary_per_task(device_run):
    tasks = summarize(device_run)["tasks"]
    assert tasks["8p_gemm"]["best_of_n"] == {"samples": 3, "correct": 2, "best_status": "correct",
                                             "best_speedup": 2.5}
    assert tasks["12p_rmsnorm"]["evolve"]["best_status"] == "runtime_error"
    assert tasks["12p_rmsnorm"]["evolve"]["best_speedup"] is None


def test_interpret_mode_reports_correctness_only(tmp_path):
    run = RunDir.open(tmp_path / "run", {"command": "optimize", "budget": 2})
    run.append(_evaluation("8p_gemm", "iterative", 0, "compile_error", mode="interpret"))
    run.append(_evaluation("8p_gemm", "iterative", 1, "correct", mode="interpret"))
    summary = summarize(run.path)
    assert not summary["timed"] and "speedups need a device" in summary["note"]
    method = summary["methods"]["iterative"]
    assert "fast_1_at" not in method and "geomean_speedup" not in method
    assert method["correct_at"] == {"1": 0.0}  # only N <= budget (2) of 1, 8, 32, 144


def test_report_cli(device_run):
    runner = CliRunner()
    result = runner.invoke(main, ["report", str(device_run), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["methods"]["best_of_n"]["samples"] == 5
    table = runner.invoke(main, ["report", str(device_run)])
    assert table.exit_code == 0 and "fast_1@8" in table.stdout and "best_of_n" in table.stdout
    assert "evolve (seeded)" in table.stdout and "best_of_n (seeded)" not in table.stdout
    assert "evolve: seeded (starts from the shipped seed kernels)" in table.stdout
    assert "$ 0.50 (+1 unpriced call)" in table.stdout  # best_of_n: one priced, one not
    assert "$ 0.00" not in table.stdout  # evolve's only call is unpriced: never shown as $0


def test_seeded_methods_are_flagged(device_run, tmp_path):
    methods = summarize(device_run)["methods"]
    assert methods["evolve"]["seeded"] is True  # from its task_done event
    assert methods["best_of_n"]["seeded"] is False
    # An interrupted run has no task_done yet: the config says it.
    run = RunDir.open(tmp_path / "open", {"command": "optimize", "method": "evolve", "seeded": True})
    run.append(_evaluation("8p_gemm", "evolve", 0, "correct", mode="interpret"))
    run.append(_evaluation("8p_gemm", "best_of_n", 0, "correct", mode="interpret"))
    methods = summarize(run.path)["methods"]
    assert methods["evolve"]["seeded"] is True and methods["best_of_n"]["seeded"] is False
    unseeded = RunDir.open(tmp_path / "plain", {"command": "optimize", "method": "evolve",
                                                "seeded": False})
    unseeded.append(_evaluation("8p_gemm", "evolve", 0, "correct", mode="interpret"))
    assert summarize(unseeded.path)["methods"]["evolve"]["seeded"] is False
    table = CliRunner().invoke(main, ["report", str(unseeded.path)]).stdout
    assert "(seeded)" not in table and "shipped seed kernels" not in table


@pytest.mark.parametrize("llm, text", [
    (None, "-"),
    ({"calls": 3, "cost": 0.0, "calls_without_cost": 3}, "unpriced"),
    ({"calls": 3, "cost": 1.234, "calls_without_cost": 0}, "$ 1.23"),
    ({"calls": 3, "cost": 0.0, "calls_without_cost": 0}, "$ 0.00"),  # priced at zero: free
    ({"calls": 5, "cost": 1.0, "calls_without_cost": 4}, "$ 1.00 (+4 unpriced calls)"),
    # Failed requests have no answer to price: the answered ones are all unpriced.
    ({"calls": 4, "cost": 0.0, "calls_without_cost": 3, "failed_calls": 1}, "unpriced"),
    ({"calls": 2, "cost": 0.0, "calls_without_cost": 0, "failed_calls": 2}, "$ 0.00"),
])
def test_cost_text(llm, text):
    assert cost_text(llm) == text


def test_failed_calls_are_not_counted_as_unpriced(tmp_path):
    run = RunDir.open(tmp_path / "run", {"command": "optimize", "budget": 2})
    run.append(_evaluation("8p_gemm", "iterative", 0, "correct", mode="interpret"))
    run.append({"type": "llm_call", "method": "iterative", "cost": 0.25})
    run.append({"type": "llm_call", "method": "iterative", "cost": None, "error": "HTTP 500",
                "finish_reason": "error", "status_code": 500})
    llm = summarize(run.path)["methods"]["iterative"]["llm"]
    assert llm["calls"] == 2 and llm["failed_calls"] == 1 and llm["calls_without_cost"] == 0
    assert cost_text(llm) == "$ 0.25"


def test_report_on_a_non_run_directory_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "not a run directory" in result.stderr


def test_summary_lists_tasks_in_catalogue_order(tmp_path):
    run = RunDir.open(tmp_path / "run", {"command": "run"})
    for task in ("19k_matmul_subtract_multiply_relu", "12p_rmsnorm", "2p_gqa_attention", "8p_gemm"):
        run.append(_evaluation(task, "run", 0, "correct", mode="interpret"))
    order = list(summarize(run.path)["tasks"])
    assert order == ["2p_gqa_attention", "8p_gemm", "12p_rmsnorm", "19k_matmul_subtract_multiply_relu"]
    table = CliRunner().invoke(main, ["report", str(run.path)]).stdout
    assert table.index("2p_gqa") < table.index("8p_gemm") < table.index("12p_rms") < table.index("19k_")


def test_failures_per_series_in_json_and_text(device_run):
    """Each failing sample in its taxonomy category, per method · target (these events have no
    target: the method alone), in --json and in the terminal table."""
    summary = summarize(device_run)
    assert summary["failures"] == {"best_of_n": {"compile_error": 1, "incorrect": 1},
                                   "evolve": {"runtime_error": 1}}  # the evolve seed is no sample
    assert set(summary["series"]) == {"best_of_n", "evolve"}
    assert summary["series"]["best_of_n"]["samples"] == 5 and summary["series"]["evolve"]["seeded"]
    result = CliRunner().invoke(main, ["report", str(device_run), "--json"])
    assert json.loads(result.stdout)["failures"] == summary["failures"]
    table = CliRunner().invoke(main, ["report", str(device_run)]).stdout
    assert "failures per method · target (taxonomy)" in table
    for label in ("compile / lowering error", "numerical mismatch", "runtime error"):
        assert label in table, label
    assert "static policy" not in table  # categories without a failure are not listed


def test_unfinished_run_is_reported_in_json_and_text(device_run):
    progress = summarize(device_run)["progress"]  # the fixture's run has no run_end
    assert progress["finished"] is False and progress["planned"] is None
    assert progress["text"].startswith("unfinished: no run_end: the run has not finished")
    assert "7 samples so far" in progress["text"]  # the evolve seed is no sample
    assert "unfinished: no run_end" in CliRunner().invoke(main, ["report", str(device_run)]).stdout


def test_progress_of_an_interrupted_suite_run(tmp_path):
    from report_runs import suite_run

    path = suite_run(tmp_path / "open", done=70, lost=2)
    summary = summarize(path)
    progress = summary["progress"]
    assert (progress["evaluations"], progress["planned"], progress["lost"]) == (70, 100, 2)
    assert progress["text"].startswith("incomplete: 70 of 100 evaluations; 2 lost")
    assert {name: s["samples"] for name, s in summary["series"].items()} == {"run:seed · gpu": 35,
                                                                           "run:seed · tpu": 35}
    table = CliRunner().invoke(main, ["report", str(path)]).stdout
    assert "incomplete: 70 of 100 evaluations; 2 lost" in table
    assert "per method · target" in table and "run:seed · gpu" in table and "run:seed · tpu" in table
    done = summarize(suite_run(tmp_path / "done"))["progress"]
    assert done["finished"] and done["text"] is None and done["planned"] == 100
