"""The sample view of agent runs: every sample with its prompt, answer, kernel, verdict and
lineage, in the HTML report (per-task files loaded when a task is opened) and on the terminal
(``jaxbench report --samples``).

Two runs: an evolve run the real driver writes with the scripted model and instant evaluator
of ``agent_fakes`` (seeds, islands, parents, proposals asked again), and a synthetic
iterative run of 50 tasks x 144 samples (7,200) in refinement chains. The browser tests open
both in headless Chromium (skipped, saying why, where it is absent), as a person would.
"""

from __future__ import annotations

import json
import re

import pytest
from browser_check import missing, sample_view
from click.testing import CliRunner
from report_runs import big_agent_run, evolve_run, interpret_run

from jaxbench.cli import main
from jaxbench.report.data import load_run
from jaxbench.report.samples import collect

pytest.importorskip("plotly", reason="the HTML report needs the results extra (plotly)")

from jaxbench.report.html import write_report  # noqa: E402
from jaxbench.report.sample_view import sample_href, sample_page, sidecar_dir  # noqa: E402


@pytest.fixture(scope="module")
def evolve(tmp_path_factory):
    root = tmp_path_factory.mktemp("evolve")
    path = evolve_run(root / "run")
    return path, write_report(path, root / "out" / "evolve.html")


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("big")
    path = big_agent_run(root / "run")
    return path, write_report(path, root / "out" / "big.html")


def _sidecar(report, i: int) -> dict:
    text = (sidecar_dir(report) / f"{i}.js").read_text()
    found = re.fullmatch(r"jaxbenchSamples\((\d+),(.*)\);\n", text, re.S)
    assert found and int(found.group(1)) == i
    return json.loads(found.group(2))


def _index(page: str) -> dict:
    blob = re.search(r'<script type="application/json" id="sv-index">(.*?)</script>', page, re.S).group(1)
    return json.loads(blob.replace("<\\/", "</"))


def test_every_sample_has_its_call_kernel_verdict_and_lineage(evolve):
    """Each evolve sample is joined with the model call that answered it (prompt, answer), its
    kept source and its parent; a child comes after its parent, one level deeper; proposals
    asked again are attached to the sample they led to."""
    path, _ = evolve
    run = load_run(path)
    found = collect(run)
    assert list(found) == ["8p_gemm", "12p_rmsnorm"]  # catalogue order
    retried = 0
    for by_series in found.values():
        samples = by_series["evolve · tpu"]
        assert sum(not s.seed for s in samples) == 8 and samples[0].seed
        position = {s.step: i for i, s in enumerate(samples)}
        for i, s in enumerate(samples):
            if s.seed:
                assert s.call is None and s.depth == 0
                continue
            assert s.call["prompt"].startswith("You are an expert") and s.call["response"]
            assert run.source(s.result)[0] is not None
            if s.parent:
                parent = samples[position[s.parent]]
                assert position[s.parent] < i and s.depth == parent.depth + 1
                assert s.step in parent.children
            base = s.step.split("/retry")[0]
            steps = [a["step"] for a in s.attempts]
            assert steps == ([base, *(f"{base}/retry{n}" for n in range(1, len(steps)))] if steps else [])
            retried += bool(s.attempts)
    assert retried, "the scripted answers make evolve ask again"


def test_sample_page_carries_an_index_and_each_task_is_a_file_beside_it(evolve):
    """The report links to its sample view, a page of its own without the plotting library;
    the page holds an index, each task's samples are a file beside it, equal to the events."""
    path, report = evolve
    page = report.read_text()
    samples = sample_page(report).read_text()
    assert 'id="samples-link" href="evolve.samples.html"' in page
    assert "<script src=" not in samples and 'href="evolve.html"' in samples
    index = _index(samples)
    assert index["dir"] == "evolve.samples"
    assert [t["task"] for t in index["tasks"]] == ["8p_gemm", "12p_rmsnorm"]
    run = load_run(path)
    for i, entry in enumerate(index["tasks"]):
        data = _sidecar(report, i)
        assert data["task"] == entry["task"]
        rows = data["series"]["evolve · tpu"]
        results = {e.extra["step"]: e for e in run.evaluations if e.task == entry["task"]}
        calls = {c["step"]: c for c in run.llm_calls if c["task"] == entry["task"]}
        for row in rows:
            result = results[row["step"]]
            assert row["status"] == result.status and row["message"] == (result.message or "")
            assert data["sources"][row["k"]] == run.source(result)[0]  # the kernel, kept once
            if not row["seed"]:
                prefix, rest = row["prompt"]
                prompt = (data["prefixes"][prefix] if prefix >= 0 else "") + rest
                call = calls[row["step"]]
                assert prompt == call["prompt"] and row["answer"] == call["response"]
        assert sum(entry["series"]["evolve · tpu"]["counts"].values()) == 8
        # the best kernel of the task table links to its sample
        best = entry["series"]["evolve · tpu"]["best"]
        href = sample_href(entry["task"], "evolve · tpu", best, "evolve.samples.html")
        assert f'class="sample-link" href="{href}"' in page
    assert "You are an expert" not in page + samples  # prompts are not in the pages: loaded per task


def test_a_7200_sample_run_keeps_the_page_small(big):
    path, report = big
    index = _index(sample_page(report).read_text())
    assert sum(s["n"] for t in index["tasks"] for s in t["series"].values()) == 7200
    assert len(index["tasks"]) == 50 and report.stat().st_size < 1_500_000
    assert sample_page(report).stat().st_size < 200_000
    assert "Shapes and rules" not in report.read_text() + sample_page(report).read_text()
    data = _sidecar(report, 3)
    rows = data["series"]["iterative · tpu"]
    assert len(rows) == 144 and len(data["prefixes"]) == 1  # the shared prompt head, kept once
    assert [r["depth"] for r in rows[:3]] == [0, 1, 2]  # chain c0: t0, t1, t2 under each other
    assert rows[1]["parent"] == rows[0]["step"] == "c0/t0"


def test_other_runs_have_no_sample_view(tmp_path):
    report = write_report(interpret_run(tmp_path / "run"), tmp_path / "r.html")
    assert "samples-link" not in report.read_text() and not sidecar_dir(report).exists()
    assert not sample_page(report).exists()


def test_samples_on_the_terminal(evolve):
    path, _ = evolve
    result = CliRunner().invoke(main, ["report", str(path), "--samples"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "8p_gemm · evolve · tpu: 8 samples" in out and "12p_rmsnorm · evolve · tpu: 8 samples" in out
    lines = [line for line in out.splitlines() if re.match(r"\s+(seed|#\d)", line)]
    assert len(lines) == 18 and "<- best" in out
    child = next(line for line in lines if "gen1/" in line)
    assert len(child) - len(child.lstrip()) >= 4  # indented under its parent (a root: 2)
    correct = CliRunner().invoke(main, ["report", str(path), "--samples", "--status", "correct"]).stdout
    listed = [line for line in correct.splitlines() if re.match(r"\s+(seed|#\d)", line)]
    assert listed and all(" · correct" in line for line in listed)
    blocks = CliRunner().invoke(main, ["report", str(path), "--samples", "--category", "block shape"]).stdout
    listed = [line for line in blocks.splitlines() if re.match(r"\s+(seed|#\d)", line)]
    assert listed and all("(block shape)" in line for line in listed)
    run = load_run(path)
    child = next(e for e in run.evaluations
                 if e.task == "8p_gemm" and e.extra.get("parent") and e.extra.get("sample"))
    one = CliRunner().invoke(main, ["report", str(path), "--samples", "--task", "8p_gemm",
                                    "--step", child.extra["step"]])
    assert one.exit_code == 0, one.output
    for part in ("--- prompt ---", "--- answer ---", "--- kernel ---",
                 f"--- diff from {child.extra['parent']} ---", f"status: {child.status}", "## Task 8p_gemm"):
        assert part in one.stdout, part
    bad = CliRunner().invoke(main, ["report", str(path), "--samples", "--category", "nonsense"])
    assert bad.exit_code == 2 and "unknown failure category" in bad.stderr


def test_samples_flag_needs_an_agent_run(tmp_path):
    result = CliRunner().invoke(main, ["report", str(interpret_run(tmp_path / "run")), "--samples"])
    assert result.exit_code == 2 and "holds no agent samples" in result.stderr


@pytest.mark.skipif(missing() is not None, reason=f"browser check unavailable: {missing()}")
def test_sample_view_in_headless_chromium(evolve, big):
    """A person opens a task, then a sample: its verdict, prompt (collapsed until opened),
    answer, kernel and diff from its parent are shown; the status filter lists only that
    status; the task table's best kernel opens its sample. The page of the 7,200-sample run is
    interactive in under 3 s and opens a task in under 3 s."""
    path, report = evolve
    run = load_run(path)
    child = next(e for e in run.evaluations if e.task == "8p_gemm" and e.extra.get("parent")
                 and e.extra.get("mutation") in ("diff", "full") and e.extra.get("sample") is not None)
    step, parent = child.extra["step"], child.extra["parent"]
    seen = sample_view(report, "8p_gemm", step, filter_status="correct")
    assert seen["listed"] == 9, "the task's samples (8 and the seed) are listed once it is opened"
    assert seen["console_errors"] == []
    sample = seen["sample"]
    call = next(c for c in run.llm_calls if c["task"] == "8p_gemm" and c["step"] == step)
    assert seen["prompt_collapsed"] and sample["prompt"] == call["prompt"]
    assert sample["answer"] == call["response"] and sample["kernel"] == run.source(child)[0]
    assert sample["facts"]["status"] == child.status and sample["facts"]["parent"] == parent
    assert sample["facts"]["mutation"] == child.extra["mutation"]
    assert f"diff from its parent {parent}" in sample["diff"]
    assert sample["added"] >= 1 and sample["removed"] >= 1  # the variants differ by a line
    assert seen["filtered"] and set(seen["filtered"]) == {"correct"}
    assert seen["best"] == seen["best_step"]

    _, report = big
    seen = sample_view(report, "12p_rmsnorm", "c1/t5")
    assert seen["console_errors"] == [] and seen["listed"] == 144
    assert seen["ready_ms"] < 3000, f"interactive after {seen['ready_ms']:.0f} ms"
    assert seen["open_ms"] < 3000, f"a task opened in {seen['open_ms']:.0f} ms"
    sample = seen["sample"]
    assert "Turn 5 of chain 1" in sample["prompt"] and "turn 5" in sample["answer"]
    assert sample["facts"]["parent"] == "c1/t4" and "* 5" in sample["kernel"]
    assert "- " in sample["diff"] and sample["added"] == 1 and sample["removed"] == 1
    print(f"7,200 samples: interactive after {seen['ready_ms']:.0f} ms, a task opened in "
          f"{seen['open_ms']:.0f} ms")
