"""``jaxbench report``: per-task bests and per-method metrics from hand-made run events."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from jaxbench.cli import main
from jaxbench.contract import EvaluationResult
from jaxbench.contract.result import FIELDS
from jaxbench.report.summary import summarize
from jaxbench.report.usage import cost_text
from jaxbench.runs import RunDir


def _evaluation(task, method, sample, status, speedup=None, stage=None, mode="device", **extra):
    """The evaluation event of ``method``'s ``sample``, without a target (the method alone names
    its series): ``extra``'s keys that are result fields go in the result, the rest beside it."""
    result = EvaluationResult(
        task=task, target="", mode=mode, size="", status=status, speedup=speedup,
        stage=stage or ("correct" if status in ("correct", "incorrect") else "lower"),
        **{k: v for k, v in extra.items() if k in FIELDS})
    return result.to_event(method=method, step=f"s{sample}", sample=sample,
                           **{k: v for k, v in extra.items() if k not in FIELDS})


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


# -- LLM calls and evaluation time (report/usage.py) --------------------------------------------

def test_percentile_interpolates_between_the_closest_ranks():
    from jaxbench.report.usage import percentile

    assert percentile([], 0.5) is None and percentile([7.0], 0.9) == 7.0
    # sorted 2, 4, 6, 10: p50 at rank h = 3 * 0.5 = 1.5, between 4 and 6; p90 at h = 2.7,
    # 0.7 of the way from 6 to 10
    assert percentile([10.0, 2.0, 6.0, 4.0], 0.5) == pytest.approx(5.0)
    assert percentile([10.0, 2.0, 6.0, 4.0], 0.9) == pytest.approx(8.8)
    assert percentile([3.0, 1.0], 0.9) == pytest.approx(2.8)
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0  # an odd count: the middle value
    assert percentile([5.0, 1.0, 3.0], 0.0) == 1.0 and percentile([5.0, 1.0, 3.0], 1.0) == 5.0


@pytest.fixture
def usage_run(tmp_path):
    from report_runs import usage_run

    return usage_run(tmp_path / "usage")


def test_usage_kernel_and_plan_calls_apart(usage_run):
    """The numbers of report_runs.USAGE_CALLS, computed by hand."""
    usage = summarize(usage_run)["usage"]
    assert list(usage) == ["autocomp · tpu", "best_of_n · tpu"]
    auto = usage["autocomp · tpu"]
    assert (auto["method"], auto["target"], auto["models"]) == ("autocomp", "tpu", ["openai:example-model"])
    assert "by_model" not in auto  # one model
    kernel, plan, every = auto["llm"]["kernel"], auto["llm"]["plan"], auto["llm"]["all"]
    # kernel: five calls, one failed (no latency, tokens or price), one from the local cache
    # (counted like any answered call); latencies 2, 4, 10, 6 s
    assert (kernel["calls"], kernel["failed_calls"], kernel["cached_calls"]) == (5, 1, 1)
    assert kernel["latency_calls"] == 4 and kernel["latency_total_s"] == pytest.approx(22.0)
    assert kernel["latency_p50_s"] == pytest.approx(5.0) and kernel["latency_p90_s"] == pytest.approx(8.8)
    assert (kernel["input_tokens"], kernel["output_tokens"]) == (5000, 1100)
    # cached input: the two calls that report it, (400 + 0) / (1000 + 1000); the None and the
    # absent field are not reports
    assert kernel["cached_input_calls"] == 2 and kernel["cached_input_tokens"] == 400
    assert kernel["cached_input_share"] == pytest.approx(0.2)
    assert kernel["cost"] == pytest.approx(0.06) and kernel["calls_without_cost"] == 1  # s2
    # plan: latencies 1 and 3 s; 250 + 250 of 500 + 500 input tokens from the prompt cache
    assert (plan["calls"], plan["failed_calls"], plan["cached_calls"]) == (2, 0, 0)
    assert plan["latency_p50_s"] == pytest.approx(2.0) and plan["latency_p90_s"] == pytest.approx(2.8)
    assert plan["latency_total_s"] == pytest.approx(4.0)
    assert (plan["input_tokens"], plan["output_tokens"]) == (1000, 100)
    assert plan["cached_input_share"] == pytest.approx(0.5)
    assert plan["cost"] == pytest.approx(0.01) and plan["calls_without_cost"] == 0
    # all seven: latencies 1, 2, 3, 4, 6, 10 (p50 at h = 2.5: 3.5; p90 at h = 4.5: 8.0)
    assert (every["calls"], every["failed_calls"], every["latency_calls"]) == (7, 1, 6)
    assert every["latency_p50_s"] == pytest.approx(3.5) and every["latency_p90_s"] == pytest.approx(8.0)
    assert every["latency_total_s"] == pytest.approx(26.0)
    assert (every["input_tokens"], every["output_tokens"]) == (6000, 1200)
    assert every["cached_input_share"] == pytest.approx(900 / 3000)
    assert every["cost"] == pytest.approx(0.07) and every["calls_without_cost"] == 1
    # evaluations: 3, 5 and 10 s run; the reused verdict (its copied wall_s 3 s) and the answer
    # without a kernel took no evaluation time
    assert auto["evaluations"] == {"evaluations": 5, "run": 3, "reused": 1, "no_kernel": 1, "timed": 3,
                                   "time_total_s": 18.0, "time_p50_s": 5.0}
    bon = usage["best_of_n · tpu"]
    assert bon["llm"]["plan"]["calls"] == 0 and bon["llm"]["kernel"]["calls"] == 2
    assert bon["llm"]["kernel"]["latency_p90_s"] == pytest.approx(2.4)
    assert bon["llm"]["kernel"]["cached_input_share"] is None  # no call reports prompt-cache hits
    assert bon["llm"]["kernel"]["cost"] == pytest.approx(0.3)
    assert bon["evaluations"]["time_total_s"] == 10.0 and bon["evaluations"]["time_p50_s"] == 5.0


def _rows(text: str) -> list[list[str]]:
    """The cells of a rich table's body rows (one line each)."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines()
            if line.startswith("│")]


def test_usage_tables_in_the_terminal(usage_run):
    from rich.console import Console

    from jaxbench.report.usage import print_usage

    console = Console(width=220, record=True, highlight=False)
    print_usage(summarize(usage_run)["usage"], console)
    text = console.export_text()
    calls, evals = text.split("evaluation time per method · target")
    assert "LLM calls per method · target" in calls and "model" not in calls  # one model
    assert _rows(calls) == [
        ["autocomp · tpu", "5 kernel (1 cached)", "1", "5.00 s", "8.80 s", "22.0 s", "5,000 / 1,100",
         "20.0% (2 of 4 calls)", "$ 0.06 (+1 unpriced call)"],
        ["", "2 plan", "0", "2.00 s", "2.80 s", "4.00 s", "1,000 / 100", "50.0%", "$ 0.01"],
        ["", "7 all (1 cached)", "1", "3.50 s", "8.00 s", "26.0 s", "6,000 / 1,200", "30.0% (4 of 6 calls)",
         "$ 0.07 (+1 unpriced call)"],
        ["best_of_n · tpu", "2 kernel", "0", "2.00 s", "2.40 s", "4.00 s", "1,700 / 1,000", "n/a", "$ 0.30"],
    ]
    assert _rows(evals) == [["autocomp · tpu", "3 + 1 reused + 1 no kernel", "18.0 s", "5.00 s"],
                            ["best_of_n · tpu", "2", "10.0 s", "5.00 s"]]
    report = CliRunner().invoke(main, ["report", str(usage_run)])
    assert report.exit_code == 0, report.output
    assert "LLM calls per method · target" in report.stdout and "5 kernel (1 cached)" in report.stdout
    assert "evaluation time per method · target" in report.stdout
    result = CliRunner().invoke(main, ["report", str(usage_run), "--json"])
    assert json.loads(result.stdout)["usage"]["autocomp · tpu"]["llm"]["plan"]["calls"] == 2


def test_usage_without_llm_calls_is_evaluation_time_only(tmp_path):
    """A plain `jaxbench run`: no LLM columns, the evaluation time per series."""
    from report_runs import interpret_run

    path = interpret_run(tmp_path / "run")
    usage = summarize(path)["usage"]
    assert list(usage) == ["run:seed · tpu"] and usage["run:seed · tpu"]["llm"] is None
    assert usage["run:seed · tpu"]["evaluations"]["time_total_s"] == 45.0  # five of 9 s
    table = CliRunner().invoke(main, ["report", str(path)]).stdout
    assert "LLM calls" not in table and "latency" not in table
    rows = _rows(table[table.index("evaluation time per method · target"):])
    assert rows[0] == ["run:seed · tpu", "5", "45.0 s", "9.00 s"]


def test_usage_of_events_without_latency_tokens_or_wall_time(device_run):
    """Older or scripted events: no latency_s, tokens, kind or wall_s. n/a, never 0 s."""
    from jaxbench.report.usage import cells, columns, rows

    usage = summarize(device_run)["usage"]
    evolve = usage["evolve"]  # the run's events have no target: the method alone names the series
    assert evolve["llm"]["kernel"]["calls"] == 1 and evolve["llm"]["kernel"]["latency_p50_s"] is None
    assert evolve["evaluations"]["run"] == 3 and evolve["evaluations"]["time_total_s"] is None  # seed too
    cols = columns(usage)
    row = next(r for r in rows(usage) if r.label == "evolve")
    assert dict(zip(cols, cells(row, cols), strict=True)) == {
        "method · target": "evolve", "calls": "1 kernel", "failed": "0", "latency p50": "n/a",
        "latency p90": "n/a", "latency total": "n/a", "tokens in / out": "n/a / n/a", "cached input": "n/a",
        "cost": "unpriced", "evaluations": "3", "eval time": "n/a", "eval p50": "n/a"}


def test_usage_per_model_when_a_method_used_several(tmp_path):
    from jaxbench.report.usage import cells, columns, rows

    run = RunDir.open(tmp_path / "run", {"command": "optimize"})
    run.append(_evaluation("8p_gemm", "iterative", 0, "correct", mode="interpret", wall_s=2.0))
    for model, kind, latency, cost in (("m-a", "kernel", 1.0, 0.1), ("m-b", "kernel", 3.0, None),
                                       ("m-b", "plan", 2.0, 0.2)):
        run.append({"type": "llm_call", "method": "iterative", "model": model, "kind": kind,
                    "latency_s": latency, "input_tokens": 10, "output_tokens": 5, "cost": cost})
    usage = summarize(run.path)["usage"]["iterative"]
    assert usage["models"] == ["m-a", "m-b"]
    assert usage["by_model"]["m-b"]["all"]["latency_p50_s"] == pytest.approx(2.5)
    assert usage["by_model"]["m-a"]["plan"]["calls"] == 0
    assert usage["llm"]["kernel"]["calls"] == 2 and usage["llm"]["kernel"]["calls_without_cost"] == 1
    spent = {"iterative": usage}
    cols = columns(spent)
    assert cols[:3] == ["method · target", "model", "calls"]
    table = [cells(r, cols)[:3] + cells(r, cols)[-4:] for r in rows(spent)]
    assert table == [
        ["iterative", "m-a", "1 kernel", "$ 0.10", "1", "2.00 s", "2.00 s"],
        ["", "m-b", "1 kernel", "unpriced", "", "", ""],
        ["", "m-b", "1 plan", "$ 0.20", "", "", ""],
        ["", "m-b", "2 all", "$ 0.20 (+1 unpriced call)", "", "", ""],
        ["", "all models", "2 kernel", "$ 0.10 (+1 unpriced call)", "", "", ""],
        ["", "all models", "1 plan", "$ 0.20", "", "", ""],
        ["", "all models", "3 all", "$ 0.30 (+1 unpriced call)", "", "", ""],
    ]


# Events of a hand-edited (or foreign) events.jsonl whose fields hold other JSON types: each
# is skipped with one warning naming the file, the line and the field.
MALFORMED = [
    ({"speedup": "fast"}, '"speedup" is a string ("fast"), not a number or null'),
    ({"wall_s": "x"}, '"wall_s" is a string ("x"), not a number or null'),
    ({"t_kernel_ms": "1e3ms"}, '"t_kernel_ms" is a string ("1e3ms"), not a number or null'),
    ({"trials": "three"}, '"trials" is a string ("three"), not an integer or null'),
    ({"status": {"verdict": "correct"}},
     '"status" is an object ({"verdict": "correct"}), not a string or null'),
    ({"message": ["a", "list"]}, '"message" is an array (["a", "list"]), not a string or null'),
    ({"task": ["8p_gemm"]}, '"task" is an array (["8p_gemm"]), not a string'),
]


def _malformed_run(path):
    """A finished `jaxbench run` whose events.jsonl holds, between good evaluations of
    12p_rmsnorm and 8p_gemm, the MALFORMED evaluations (of 1p_flash_attention) and a line that
    is no JSON object; returns the run's path and its warnings by line number."""
    from report_runs import evaluation

    run = RunDir.open(path, {"command": "run", "kernels": "seed", "target": "gpu",
                             "mode": "device", "size": "full"})
    events = path / "events.jsonl"
    warnings = {}
    run.append(evaluation("12p_rmsnorm", "correct", times=(0.61, 0.5), kind="seed"))
    for fields, said in MALFORMED:
        run.append({**evaluation("1p_flash_attention", "correct", times=(22.7, 3.9), kind="seed"),
                    **fields})
        warnings[len(events.read_text().splitlines())] = f"evaluation event whose {said}"
    with open(events, "a") as f:
        f.write('["not", "an", "event"]\n')
    warnings[len(events.read_text().splitlines())] = "an array, not a JSON object"
    run.append(evaluation("8p_gemm", "incorrect", kind="seed", message="wrong answer"))
    run.finish(wall_s=1.0)
    return path, warnings


def _assert_warned_once(stderr, events, warnings):
    lines = [line for line in stderr.splitlines() if line.startswith("jaxbench: warning:")]
    assert lines == [f"jaxbench: warning: {events}, line {n}: skipped: {said}"
                     for n, said in sorted(warnings.items())]


def test_malformed_events_are_skipped_with_one_warning_each(tmp_path, capsys):
    from jaxbench.runs import read_events

    path, warnings = _malformed_run(tmp_path / "run")
    tasks = [e.get("task") for e in read_events(path) if e["type"] == "evaluation"]
    assert tasks == ["12p_rmsnorm", "8p_gemm"]
    assert len(list(read_events(path))) == 4  # read again: no second warning
    _assert_warned_once(capsys.readouterr().err, path / "events.jsonl", warnings)


@pytest.mark.parametrize("event,problem", [
    ({"type": "evaluation", "task": "8p_gemm", "speedup": None, "sample": None}, None),
    ({"type": "evaluation", "task": "8p_gemm", "speedup": 2, "trials": 3}, None),
    ({"type": "retime", "speedup": "not checked"}, None),
    ({"type": "evaluation", "status": "correct"}, 'evaluation event without "task"'),
    ({"type": "evaluation", "task": "8p_gemm", "speedup": True},
     'evaluation event whose "speedup" is a boolean (true), not a number or null'),
    ({"type": "evaluation", "task": "8p_gemm", "sample": 1.5},
     'evaluation event whose "sample" is a number (1.5), not an integer or null'),
    ({"type": "llm_call", "method": "best_of_n", "cost": "$1"},
     'llm_call event whose "cost" is a string ("$1"), not a number or null'),
    ({"type": "run_end", "secret": 12}, 'run_end event whose "secret" is a number (12), not a string '
                                      'or null'),
    ("text", "a string, not a JSON object"),
])
def test_event_problem(event, problem):
    from jaxbench.runs.directory import event_problem

    assert event_problem(event) == problem


def test_evaluation_events_are_read_as_results_with_the_run_keys_beside_them(tmp_path):
    """The report reads an evaluation event through EvaluationResult.read: its fields, and the
    run's and the method's keys in ``extra``; an evaluation event without a status holds no
    result and is left out, like events of other types."""
    from jaxbench.report.data import load_run, read_evaluation

    event = _evaluation("8p_gemm", "iterative", 3, "correct", 1.5, mode="interpret", wall_s=2.0,
                        parent="s2", job="j")
    result = read_evaluation(event)
    assert (result.task, result.status, result.speedup, result.wall_s) == ("8p_gemm", "correct", 1.5, 2.0)
    assert {k: result.extra[k] for k in ("method", "step", "sample", "parent", "job")} == {
        "method": "iterative", "step": "s3", "sample": 3, "parent": "s2", "job": "j"}
    statusless = {k: v for k, v in event.items() if k != "status"}
    assert read_evaluation(statusless) is None
    assert read_evaluation({"type": "llm_call", "task": "8p_gemm", "status": "correct"}) is None
    run = RunDir.open(tmp_path / "run", {"command": "optimize", "budget": 4})
    for e in (event, statusless, {"type": "llm_call", "method": "iterative", "step": "s3"}):
        run.append(e)
    loaded = load_run(run.path)
    assert [r.extra["step"] for r in loaded.evaluations] == ["s3"] and len(loaded.llm_calls) == 1
    assert summarize(run.path)["progress"]["evaluations"] == 1


def test_runs_written_before_results_had_a_schema_read_the_same(tmp_path):
    """Events as runs wrote them before EvaluationResult (no ``schema``, ``stages`` or
    ``started_at``; the keys in another order) give the same summary and export as the same
    events written through EvaluationResult.to_event."""
    from report_runs import device_run

    from jaxbench.export import rows

    new = device_run(tmp_path / "new")
    old = RunDir.open(tmp_path / "old", json.loads((new / "manifest.json").read_text())["config"]).path
    with open(old / "events.jsonl", "w") as f:
        for line in (new / "events.jsonl").read_text().splitlines():
            event = json.loads(line)
            if event.get("type") == "evaluation":
                event = {k: event[k] for k in sorted(event) if k not in ("schema", "stages", "started_at")}
            f.write(json.dumps(event) + "\n")
    new_summary, old_summary = summarize(new), summarize(old)
    assert {**old_summary, "run": None} == {**new_summary, "run": None}
    of_the_run = ("run", "run_created_at", "secret_sha256", "secret_verified")  # the manifests' own

    def evaluated(path):
        return [{k: v for k, v in r.items() if k not in of_the_run} for r in rows(path)]

    assert evaluated(old) == evaluated(new) and len(evaluated(new)) == 45


@pytest.mark.parametrize("args", [
    ["report", "{run}"],
    ["report", "{run}", "--json"],
    ["report", "{run}", "--html", "{tmp}/report.html"],
    ["compare", "{clean}", "{run}", "--json"],
    ["compare", "{run}", "{clean}"],
    ["export", "{run}", "--format", "jsonl", "--out", "{tmp}/rows.jsonl"],
    ["export", "{run}", "--format", "csv", "--out", "{tmp}/rows.csv"],
    ["export", "{run}", "--format", "sakana", "--out", "{tmp}/sakana.json"],
], ids=lambda args: " ".join(a for a in args if not a.startswith("{")))
def test_commands_report_the_good_events_of_a_malformed_run(tmp_path, args):
    from report_runs import evaluation

    path, warnings = _malformed_run(tmp_path / "run")
    clean = RunDir.open(tmp_path / "clean", {"command": "run", "kernels": "seed"})
    for task in ("12p_rmsnorm", "8p_gemm"):  # 12p_rmsnorm as fast as in the run, 8p_gemm correct
        clean.append(evaluation(task, "correct", times=(0.61, 0.5), kind="seed"))
    clean.finish(wall_s=1.0)
    args = [a.format(run=path, clean=clean.path, tmp=tmp_path) for a in args]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    _assert_warned_once(result.stderr, path / "events.jsonl", warnings)
    out = result.stdout
    if args[0] == "export":
        out = (tmp_path / args[-1].rsplit("/", 1)[-1]).read_text()
    elif "--html" in args:
        out = (tmp_path / "report.html").read_text()
    assert "12p_rmsnorm" in out and "8p_gemm" in out and "1p_flash_attention" not in out
    if "--json" in args and args[0] == "report":
        assert list(json.loads(out)["tasks"]) == ["8p_gemm", "12p_rmsnorm"]
    if "--json" in args and args[0] == "compare":
        rows = json.loads(out)["rows"]
        assert [(r["task"], r["change"]) for r in rows] == [("8p_gemm", "regression"),
                                                            ("12p_rmsnorm", "same")]


def test_a_run_stopped_by_ctrl_c_is_not_finished(tmp_path):
    """`optimize` writes a run_end with interrupted: true when Ctrl-C stops it: the run is not
    finished until a resume ends it with its own run_end."""
    from jaxbench.report.summary import progress

    stopped = [{"type": "run_start"}, {"type": "run_end", "interrupted": True}]
    assert not progress({}, stopped)["finished"]
    assert progress({}, stopped + [{"type": "run_end", "secret": "s"}])["finished"]


def test_report_of_an_interrupted_run_shows_its_resume_command(tmp_path):
    """A run stopped by Ctrl-C records the command that resumes it in its interrupted run_end;
    the report shows that command, not only "no run_end"."""
    from report_runs import agent_run, suite_run

    resume = f"jaxbench run --suite jaxbench --kernels seed --out {tmp_path / 'suite'}"
    path = suite_run(tmp_path / "suite", done=70)
    suite = RunDir.open(path, json.loads((path / "manifest.json").read_text())["config"])
    suite.interrupt(signal="SIGINT", evaluations=70, planned=100, resume=resume)
    progress = summarize(suite.path)["progress"]
    assert progress["resume"] == resume and not progress["finished"]
    assert progress["text"] == ("incomplete: 70 of 100 evaluations; interrupted by SIGINT; "
                                f"resume with: {resume}")
    table = CliRunner(env={"COLUMNS": "400"}).invoke(main, ["report", str(suite.path)]).stdout
    assert f"resume with: {resume}" in " ".join(table.split()) and "no run_end" not in table

    command = f"jaxbench optimize --tasks 8p_gemm --out {tmp_path / 'agent'}"
    agent = agent_run(tmp_path / "agent", stop_after=3)
    events = [json.loads(line) for line in (agent / "events.jsonl").read_text().splitlines()]
    stopped = events + [{"type": "run_end", "interrupted": True, "signal": "SIGTERM", "resume": command}]
    from jaxbench.report.summary import progress as progress_of

    config = json.loads((agent / "manifest.json").read_text())["config"]
    text = progress_of(config, stopped)["text"]
    assert text.endswith(f"3 of 10 tasks finished; interrupted by SIGTERM; resume with: {command}"), text
    # an interrupted run_end from before runs recorded the command: the old words
    assert "no run_end" in progress_of(config, events + [{"type": "run_end", "interrupted": True}])["text"]


def test_report_of_a_replay_run_says_its_inputs_were_public(tmp_path):
    """The terminal report and --json of a `jaxbench run --replay` run: whose inputs it drew
    again, and that its verdicts are not hardened against a kernel that knows them."""
    from jaxbench.runs import Replay

    source = RunDir.open(tmp_path / "source", {"command": "run"})
    source.finish()
    run = RunDir.open(tmp_path / "replay", {"command": "run"}, replay=Replay.of(source.path))
    run.append(_evaluation("12p_rmsnorm", "seed", 0, "correct", 1.5))
    run.finish()
    assert summarize(run.path)["replay_of"] == {"run": str(source.path),
                                               "secret_sha256": run.manifest["secret_sha256"]}
    assert summarize(source.path)["replay_of"] is None
    out = CliRunner().invoke(main, ["report", str(run.path)], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert f"replay of {source.path} (its revealed secret" in text
    assert "NOT hardened against a kernel that knows its inputs" in text
    own = CliRunner().invoke(main, ["report", str(source.path)])
    assert "replay of" not in own.stdout
