"""``jaxbench compare RUN_A RUN_B``: status and speedup changes per task, regressions first."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from report_runs import device_run, evaluation, interpret_run

from jaxbench.cli import main
from jaxbench.contract import EvaluationResult
from jaxbench.report.compare import classify, compare, folded_text
from jaxbench.runs import RunDir


def _run(path, events, config=None):
    run = RunDir.open(path, config or {"command": "run", "kernels": "x"})
    for e in events:
        run.append(e)
    run.finish()
    return run.path


@pytest.fixture
def pair(tmp_path):
    """A -> B: 8p regresses (correct -> incorrect), 12p slows 2x, 1p speeds up, 13p unchanged
    within the threshold, 19k gets fixed, 2p only in A, 50k only in B."""
    a = _run(tmp_path / "a", [
        evaluation("12p_rmsnorm", "correct", times=(1.0, 0.5), kind="seed"),
        evaluation("8p_gemm", "correct", times=(1.0, 1.0), kind="seed"),
        evaluation("1p_flash_attention", "correct", times=(2.0, 1.0), kind="seed"),
        evaluation("13p_cross_entropy", "correct", times=(1.0, 1.0), kind="seed"),
        evaluation("19k_matmul_subtract_multiply_relu", "compile_error", kind="seed"),
        evaluation("2p_gqa_attention", "correct", times=(1.0, 1.0), kind="seed"),
    ])
    b = _run(tmp_path / "b", [
        evaluation("50k_matmul_gelu_softmax", "correct", times=(1.0, 1.0), kind="seed"),
        evaluation("19k_matmul_subtract_multiply_relu", "correct", times=(1.0, 2.0), kind="seed"),
        evaluation("13p_cross_entropy", "correct", times=(1.0, 1.02), kind="seed"),
        evaluation("1p_flash_attention", "correct", times=(2.0, 0.5), kind="seed"),
        evaluation("8p_gemm", "incorrect", kind="seed", message="max abs err 3.1"),
        evaluation("12p_rmsnorm", "correct", times=(1.0, 1.0), kind="seed"),
    ])
    return a, b


def test_regressions_first_then_catalogue_order(pair):
    result = compare(*pair)
    order = [(r["change"], r["task"]) for r in result["rows"]]
    assert order == [("regression", "8p_gemm"), ("regression", "12p_rmsnorm"),
                     ("missing", "2p_gqa_attention"), ("improvement", "1p_flash_attention"),
                     ("improvement", "19k_matmul_subtract_multiply_relu"),
                     ("new", "50k_matmul_gelu_softmax"), ("same", "13p_cross_entropy")]
    rms = next(r for r in result["rows"] if r["task"] == "12p_rmsnorm")
    assert rms["speedup_a"] == 2.0 and rms["speedup_b"] == 1.0 and rms["ratio"] == 0.5
    gemm = result["rows"][0]
    assert gemm["status_a"] == "correct" and gemm["status_b"] == "incorrect"
    assert gemm["message_b"] == "max abs err 3.1"
    assert result["counts"] == {"regression": 2, "missing": 1, "status": 0, "improvement": 2,
                                "new": 1, "same": 1}


def test_classify_threshold_and_status_changes():
    def best(status: str, speedup: float | None = None) -> EvaluationResult:
        return EvaluationResult(task="8p_gemm", target="gpu", mode="device", size="full", status=status,
                                speedup=speedup)

    ok = best("correct", 1.0)
    assert classify(ok, best("correct", 0.96), 0.05) == "same"
    assert classify(ok, best("correct", 0.94), 0.05) == "regression"
    assert classify(ok, best("correct", 0.94), 0.10) == "same"
    assert classify(best("compile_error"), best("incorrect"), 0.05) == "status"
    assert classify(best("incorrect"), best("incorrect"), 0.05) == "same"
    # interpret mode: no speedups, status changes still count
    assert classify(best("correct"), best("runtime_error"), 0.05) == "regression"
    assert classify(None, ok, 0.05) == "new" and classify(ok, None, 0.05) == "missing"


def test_one_method_each_is_compared_across_methods(tmp_path):
    a = device_run(tmp_path / "a")
    b = _run(tmp_path / "b", [evaluation("8p_gemm", "correct", method="iterative", sample=0,
                                         times=(6.541, 3.0))],
             {"command": "optimize", "method": "iterative"})
    result = compare(a, b)  # A has two methods: rows keep the method in their key
    assert result["matched_on_method"] is True
    single = _run(tmp_path / "c", [evaluation("8p_gemm", "correct", method="evolve", sample=0,
                                              times=(6.541, 7.0))],
                  {"command": "optimize", "method": "evolve"})
    result = compare(single, b)
    assert result["matched_on_method"] is False
    [row] = result["rows"]
    assert row["method"] == "evolve -> iterative" and row["change"] == "improvement"


def test_compare_cli_table_json_html_and_exit_code(pair, tmp_path):
    runner = CliRunner()
    table = runner.invoke(main, ["compare", *map(str, pair)])
    assert table.exit_code == 0, table.output
    first = table.stdout.index("8p_gemm")
    assert first < table.stdout.index("12p_rmsnorm") < table.stdout.index("13p_cross_entropy")
    assert "2 regressions" in table.stdout
    as_json = runner.invoke(main, ["compare", *map(str, pair), "--json"])
    assert json.loads(as_json.stdout)["rows"][0]["task"] == "8p_gemm"
    failing = runner.invoke(main, ["compare", *map(str, pair), "--fail-on-regression"])
    assert failing.exit_code == 1
    same = runner.invoke(main, ["compare", str(pair[0]), str(pair[0]), "--fail-on-regression"])
    assert same.exit_code == 0 and "6 unchanged" in same.stdout
    pytest.importorskip("plotly")
    out = tmp_path / "cmp.html"
    page = runner.invoke(main, ["compare", *map(str, pair), "--html", str(out)])
    assert page.exit_code == 0, page.output
    text = out.read_text()
    assert 'data-chart="ratio-chart"' in text and text.index(">8p_gemm<") < text.index(">13p_cross_entropy<")


def test_compare_interpret_runs_and_bad_input(tmp_path):
    a = interpret_run(tmp_path / "a")
    b = interpret_run(tmp_path / "b", {"12p_rmsnorm": "incorrect", "8p_gemm": "correct"})
    result = compare(a, b, common=False)
    changes = {r["task"]: r["change"] for r in result["rows"]}
    assert changes["12p_rmsnorm"] == "regression" and changes["8p_gemm"] == "improvement"
    assert changes["2p_gqa_attention"] == "missing" and result["geomean_ratio"] is None
    bad = CliRunner().invoke(main, ["compare", str(a), str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "nope does not exist" in bad.stderr


def test_a_subset_run_is_compared_on_the_common_rows(tmp_path):
    """One task against a suite run: the shared task is the table; the rest is one line."""
    suite = interpret_run(tmp_path / "suite")
    one = _run(tmp_path / "one", [evaluation("8p_gemm", "incorrect", kind="seed", mode="interpret",
                                             target="tpu", message="max abs err 3.1")],
               {"command": "run", "kernels": "seed"})
    result = compare(suite, one)
    assert result["common"] is True and [r["task"] for r in result["rows"]] == ["8p_gemm"]
    missing = result["counts"]["missing"]
    assert missing >= 2 and len(result["folded"]["missing"]) == missing
    assert result["folded"]["missing"][0] == "2p_gqa_attention"  # catalogue order
    assert folded_text(result).startswith(f"{missing} rows only in A (tasks 2p_gqa_attention")
    assert compare(suite, one, common=False)["common"] is False
    assert len(compare(suite, one, common=False)["rows"]) == missing + 1
    # the command: the folded line, and --all lists every row again
    runner = CliRunner()
    table = runner.invoke(main, ["compare", str(suite), str(one)])
    assert table.exit_code == 0, table.output
    assert "only in A" in table.stdout and "(--all lists them)" in table.stdout
    assert "2p_gqa_attention" not in table.stdout.split("only in A")[0]  # not a table row
    listed = runner.invoke(main, ["compare", str(suite), str(one), "--all"])
    assert "only in A" not in listed.stdout
    assert all(task in listed.stdout for task in result["folded"]["missing"])
    # two runs with different tasks (neither a subset): every row, as before
    other = _run(tmp_path / "other", [evaluation("50k_matmul_gelu_softmax", "correct", kind="seed",
                                                 mode="interpret", target="tpu")], {"command": "run"})
    assert compare(one, other)["common"] is False


def test_runs_timed_with_other_options_are_said_to_differ(tmp_path):
    """Two runs whose --timing options differ: the comparison says so (text, JSON and the
    command's output), since a speedup's change may then come from the method; alike, it is
    silent."""
    from jaxbench.report.compare import timing_text

    events = [evaluation("12p_rmsnorm", "correct", times=(1.0, 0.5), kind="seed")]
    old = _run(tmp_path / "old", events, {"command": "run", "kernels": "seed",
                                          "timing": {"device_reps": 20, "reuse_reference": 0}})
    new = _run(tmp_path / "new", events)
    other = _run(tmp_path / "other", events)
    result = compare(old, new)
    assert result["a"]["timing"] == {"device_reps": 20, "reuse_reference": 0}
    assert result["b"]["timing"] == {}
    assert timing_text(result) == ("timed differently: A with device_reps=20 reuse_reference=0, "
                                   "B with the defaults (--timing); a speedup's change may come "
                                   "from the timing method as well as from the kernel")
    assert timing_text(compare(new, other)) is None
    out = CliRunner().invoke(main, ["compare", str(old), str(new)])
    assert "timed differently" in out.output
    assert "timed differently" not in CliRunner().invoke(main, ["compare", str(new),
                                                                str(other)]).output


def test_compare_says_whether_the_runs_drew_the_same_inputs(tmp_path):
    """A replay run and its source drew the same inputs (as do two replays of one run): the
    comparison says so; two runs with their own secrets did not, and it warns (a data-dependent
    kernel's time differs with its inputs) and says how to compare on the same ones."""
    from jaxbench.report.compare import inputs_text
    from jaxbench.runs import Replay

    events = [evaluation("7p_ragged_paged_attention", "correct", times=(1.0, 0.5), kind="seed")]
    a = _run(tmp_path / "a", events)
    b = RunDir.open(tmp_path / "b", {"command": "run", "kernels": "x"}, replay=Replay.of(a))
    b.append(events[0])
    b.finish()
    c = RunDir.open(tmp_path / "c", {"command": "run", "kernels": "x"}, replay=Replay.of(a))
    c.finish()
    fresh = _run(tmp_path / "fresh", events)
    replayed = compare(a, b.path)
    assert replayed["same_inputs"] is True
    assert replayed["a"]["inputs_sha256"] == replayed["b"]["inputs_sha256"] is not None
    assert replayed["a"]["replay_of"] is None and replayed["b"]["replay_of"]["run"] == str(a)
    assert inputs_text(replayed).startswith("same inputs: B replays A (secret sha256 ")
    assert inputs_text(compare(b.path, a)).startswith("same inputs: A replays B")
    assert inputs_text(compare(b.path, c.path)).startswith(f"same inputs: both replay {a}")
    other = compare(a, fresh)
    assert other["same_inputs"] is False
    assert inputs_text(other) == (
        "different inputs: A and B drew their inputs from different secrets, so the timings of "
        "data-dependent kernels differ between them by the inputs too; use `jaxbench run "
        f"--replay {a}` to compare on the same inputs")
    runner = CliRunner()
    said = runner.invoke(main, ["compare", str(a), str(b.path)])
    assert said.exit_code == 0 and "same inputs: B replays A" in said.stdout
    assert "different inputs" not in said.stdout
    warned = runner.invoke(main, ["compare", str(a), str(fresh)])
    assert "different inputs" in warned.stdout and "--replay" in warned.stdout
    as_json = json.loads(runner.invoke(main, ["compare", str(a), str(b.path), "--json"]).stdout)
    assert as_json["same_inputs"] is True and as_json["b"]["replay_of"]["run"] == str(a)
    # a run resumed with fresh secrets drew from several: not the same inputs as any run
    resumed = RunDir.open(tmp_path / "resumed", {"command": "run", "kernels": "x"})
    resumed.interrupt(signal="SIGINT")
    second = RunDir.open(tmp_path / "resumed", {"command": "run", "kernels": "x"})
    second.append(events[0])
    second.finish()
    assert compare(tmp_path / "resumed", tmp_path / "resumed")["same_inputs"] is False
    assert "--replay RUN (a run ended in one segment)" in inputs_text(
        compare(tmp_path / "resumed", a))
    # no speedup compared (a run without the timed task): different inputs warn of nothing
    untimed = compare(c.path, fresh)
    assert untimed["same_inputs"] is False and inputs_text(untimed) is None
    assert "different inputs" not in runner.invoke(main, ["compare", str(c.path),
                                                           str(fresh)]).stdout
