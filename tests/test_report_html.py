"""``jaxbench report --html``: a self-contained page whose charts draw in a real browser.

The browser tests render pages in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium) and measure them with the page's own layout (a 1280 px
window: axis titles inside their charts, a task table no wider than the window, rows of at
least 18 px per task), for a 100-evaluation suite run and a 4-evaluation run; they are skipped
with the reason where Chromium is absent. The other tests read the HTML itself.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from browser_check import inside, layout, missing, overlap, render
from click.testing import CliRunner
from report_runs import agent_run, device_run, evaluation, interpret_run, suite_run

from jaxbench.cli import main

pytest.importorskip("plotly", reason="the HTML report needs the results extra (plotly)")

from jaxbench.report.html import write_report  # noqa: E402

TIMED_CHARTS = {"status-chart", "rates-chart", "speedup-chart", "fast-p-chart", "fast-p-at-n-chart",
                "roofline-chart", "compile-chart", "task-status-chart", "failures-chart"}
INTERPRET_CHARTS = {"status-chart", "rates-chart", "compile-chart", "task-status-chart", "failures-chart",
                    "tolerance-chart"}
FOUR = {"12p_rmsnorm": "correct", "8p_gemm": "incorrect", "2p_gqa_attention": "compile_error",
        "19k_matmul_subtract_multiply_relu": "correct"}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    runs = {"device": device_run(root / "device"), "interpret": interpret_run(root / "interpret"),
            "suite": suite_run(root / "suite"), "four": interpret_run(root / "four", FOUR),
            "agent": agent_run(root / "agent")}
    return {name: write_report(path, root / "out" / f"{name}.html") for name, path in runs.items()}


def _charts(text: str) -> set[str]:
    return set(re.findall(r'data-chart="([\w-]+)"', text))


def test_timed_report_has_every_chart_and_the_header(reports):
    text = reports["device"].read_text()
    assert _charts(text) == TIMED_CHARTS
    assert text.count("Plotly.newPlot") == len(TIMED_CHARTS)
    for fact in ("suite", "jaxbench", "NVIDIA H200", "jax 0.", "git sha", "secret commitment",
                 "revealed at run_end and matches", "correct: 20", "geomean speedup", "fast_1@1"):
        assert fact in text, fact


def test_report_opens_offline_with_one_shared_plotly_file(reports):
    """Every page of a folder loads the one plotly.js written beside them (a relative file, so
    no network), instead of carrying its own 4.8 MB copy: a page stays small."""
    import plotly

    folder = next(iter(reports.values())).parent
    library = folder / f"plotly-{plotly.__version__}.min.js"
    assert re.search(r"\* plotly\.js v\d+\.\d+\.\d+\n", library.read_text())  # the library itself
    assert [p.name for p in folder.glob("plotly-*.js")] == [library.name]  # one copy for 5 pages
    for path in reports.values():
        text = path.read_text()
        assert re.findall(r'<script[^>]+src="([^"]*)"', text) == [library.name], "only the local library"
        assert not re.search(r'<link[^>]+href="?https?:', text), "no external stylesheet"
        assert "* plotly.js v" not in text and path.stat().st_size < 1_000_000, path


def test_interpret_report_keeps_statuses_errors_and_compile_times(reports):
    text = reports["interpret"].read_text()
    assert _charts(text) == INTERPRET_CHARTS
    assert 'data-chart-missing="timing-charts"' in text and "interpret mode" in text
    for status in ("compile_error", "incorrect", "timeout"):
        assert f"{status}: details of" in text  # the error excerpts


def test_task_table_in_catalogue_order_with_sources_and_ir(tmp_path):
    import hashlib

    from jaxbench.runs import RunDir
    from jaxbench.tasks import get_task

    seed = get_task("12p_rmsnorm").folder / "seed_tpu.py"
    artifacts = tmp_path / "run" / "artifacts" / "12p"
    artifacts.mkdir(parents=True)
    for name in ("jaxpr.txt", "stablehlo.mlir", "kernel_ir.mlir"):
        (artifacts / name).write_text(f"{name} of the kernel\n")
    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed"})
    sha = hashlib.sha256(seed.read_text().encode()).hexdigest()
    run.append(evaluation("12p_rmsnorm", "correct", kind="seed", target="tpu", mode="interpret",
                          kernel_file=str(seed), source_sha256=sha,
                          artifacts={"dir": str(artifacts), "files": ["jaxpr.txt"]}))
    run.append(evaluation("2p_gqa_attention", "compile_error", kind="seed", target="tpu",
                          mode="interpret", message="boom " * 100))
    run.finish()
    page = write_report(run.path, tmp_path / "html" / "r.html").read_text()
    rows = re.findall(r"<tr><td class=\"num\" data-v=\"\d+\">\d+</td><td data-v=\"\d+\">([\w]+)</td>", page)
    assert rows == ["2p_gqa_attention", "12p_rmsnorm"]  # as strings, 12p would come first
    assert 'href="../run/artifacts/12p/jaxpr.txt"' in page and "stablehlo</a>" in page
    assert re.search(r'href="(\.\./)+[^"]*/12p_rmsnorm/seed_tpu.py">seed_tpu.py</a>', page)
    assert "<summary>source</summary>" in page and "def kernel" in page
    assert "boom boom" in page and "..." in page  # error excerpt, cut


def test_natural_order_beats_string_order(tmp_path):
    """2p before 10p before 19k: catalogue order where sorting as strings would differ."""
    path = interpret_run(tmp_path / "run")
    page = write_report(path, tmp_path / "r.html").read_text()
    table = page[page.index('id="tasks"'):]
    order = [t for t in re.findall(r">(\d+[pk]_\w+)</td>", table)]
    assert order == ["2p_gqa_attention", "8p_gemm", "10p_sparse_moe", "12p_rmsnorm",
                     "19k_matmul_subtract_multiply_relu"]


def test_report_cli_html(tmp_path):
    path = interpret_run(tmp_path / "run")
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(path), "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists() and "HTML report" in result.stdout and "12p_rmsnorm" in result.stdout


def test_report_html_without_plotly_is_a_usage_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_plotly(name, *args, **kwargs):
        if name == "plotly" or name.startswith("plotly."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    path = interpret_run(tmp_path / "run")
    monkeypatch.setattr(builtins, "__import__", no_plotly)
    result = CliRunner().invoke(main, ["report", str(path), "--html", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "pip install -e '.[results]'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "r.html").exists()


@pytest.mark.skipif(missing() is not None, reason=f"browser check unavailable: {missing()}")
def test_charts_draw_in_headless_chromium(reports, tmp_path):
    shot = tmp_path / "report.png"
    seen = render(reports["device"], shot, sort_by="speedup")
    assert seen["console_errors"] == []
    assert {c["id"] for c in seen["charts"]} == TIMED_CHARTS
    for chart in seen["charts"]:
        assert chart["svg"], f"{chart['id']}: Plotly drew nothing"
        assert chart["width"] > 100 and chart["height"] > 100, chart
        assert chart["marks"] > 0, f"{chart['id']}: no bars, points or lines"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    # Clicking "speedup" twice sorts descending: 1p's 6.48x (evolve) first.
    assert seen["sorted_tasks"][0] == "1p_flash_attention"
    assert seen["sorted_tasks"][-1] in ("13p_cross_entropy", "50k_matmul_gelu_softmax")
    interpret = render(reports["interpret"])
    assert interpret["console_errors"] == []
    assert {c["id"] for c in interpret["charts"]} == INTERPRET_CHARTS
    assert interpret["notes"] == ["timing-charts"]


def _banner(page: str) -> str | None:
    found = re.search(r'<p class="warn banner" id="progress">(.*?)</p>', page)
    return found.group(1) if found else None


def test_unfinished_run_says_so(tmp_path):
    path = device_run(tmp_path / "open", finish=False)
    page = write_report(path, tmp_path / "open.html").read_text()
    assert "has not finished" in page and "run still open: secret not revealed yet" in page
    # Its config names no tasks: the planned total is not knowable, and no M is made up.
    assert _banner(page).startswith("unfinished: no run_end") and " of " not in _banner(page)
    assert "40 samples so far" in _banner(page)


def test_interrupted_suite_run_says_how_many_are_missing(tmp_path):
    """70 of the 100 jobs evaluated, 2 lost by the executor, no run_end: the banner counts them
    against the jobs the run's config selects (recomputed from the registry), the statuses say
    how many were not evaluated."""
    page = write_report(suite_run(tmp_path / "open", done=70, lost=2), tmp_path / "open.html").read_text()
    banner = _banner(page)
    assert banner.startswith("incomplete: 70 of 100 evaluations; 2 lost") and "has not finished" in banner
    assert "not evaluated: 30</span>" in page and "70 of 100 planned" in page
    finished = write_report(suite_run(tmp_path / "done"), tmp_path / "done.html").read_text()
    assert _banner(finished) is None and "100 of 100 planned" in finished


def test_interrupted_optimize_run_gives_an_upper_bound(tmp_path):
    page = write_report(agent_run(tmp_path / "open", stop_after=4), tmp_path / "open.html").read_text()
    assert _banner(page).startswith("incomplete: 32 of up to 80 samples (10 tasks x budget 8); "
                                    "4 of 10 tasks finished")
    assert "not evaluated: at most 48</span>" in page


def test_run_end_counting_more_than_the_events_is_incomplete(tmp_path):
    from jaxbench.runs import RunDir

    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed", "target": "tpu"})
    run.append(evaluation("8p_gemm", "correct", mode="interpret", target="tpu", job="8p_gemm|seed|tpu|x"))
    run.finish(wall_s=1.0, evaluations=3)
    assert _banner(write_report(run.path, tmp_path / "r.html").read_text()).startswith(
        "incomplete: 1 of 3 evaluations")


def _js(text: str) -> str:
    """``text`` as Plotly writes it into the page (JSON, with "/" escaped; non-ASCII as it is,
    read through :func:`_plain`, as older Plotly releases escaped it)."""
    return json.dumps(text, ensure_ascii=False).replace("/", "\\u002f")


def _plain(page: str) -> str:
    """``page`` with the non-ASCII characters some Plotly releases escape (\\u00b7) unescaped."""
    return re.sub(r"\\u([0-9a-fA-F]{4})",
                  lambda m: chr(int(m.group(1), 16)) if int(m.group(1), 16) >= 0x80 else m.group(0), page)


def _table(page: str, table_id: str) -> str:
    start = page.index(f'id="{table_id}"')
    return page[start:page.index("</table>", start)]


def test_failure_taxonomy_per_method_and_target(reports):
    """The suite run's failures by category and series, in the chart, the table and the JSON
    summary alike; categories that did not occur are not listed."""
    from jaxbench.report.summary import summarize

    page = _plain(reports["suite"].read_text())
    failures = summarize(reports["suite"].parent.parent / "suite")["failures"]
    assert set(failures) == {"run:seed · gpu", "run:seed · tpu"}
    assert set(failures["run:seed · gpu"]) == {"memory_budget", "triton_rule", "gpu_race", "runtime_error",
                                               "unverified"}
    assert set(failures["run:seed · tpu"]) == {"memory_budget", "block_shape", "outside_work", "incorrect",
                                               "nan_inf", "timeout"}
    assert sum(sum(c.values()) for c in failures.values()) == 40  # every evaluation that is not correct
    table = _table(page, "failures")
    rows = re.findall(r"<tr>(.*?)</tr>", table[table.index("<tbody>"):])
    assert len(rows) == 10 and "static policy" not in table
    vmem = next(r for r in rows if "VMEM / shared-memory budget" in r)
    assert re.findall(r'data-v="(\d+)"', vmem) == [str(failures["run:seed · gpu"]["memory_budget"]),
                                                   str(failures["run:seed · tpu"]["memory_budget"])]
    assert "Triton rule shared_memory" in vmem  # its example: the first one, run:seed · gpu's
    for name in ("GPU grid race", "Triton rule", "block shape", "outside work (policy)", "NaN / Inf",
                 "unverified"):
        assert name in table and f'"name":{_js(name)}' in page  # a row and a bar of the chart


def test_task_table_leaves_out_empty_columns_and_fits_its_text(reports):
    interpret, device = reports["interpret"].read_text(), reports["device"].read_text()
    heads = {name: re.findall(r"<th[^>]*>([^<]+)</th>", _table(page, "tasks"))
             for name, page in (("interpret", interpret), ("device", device))}
    for column in ("speedup", "t_kernel ms", "t_ref ms", "IR"):
        assert column not in heads["interpret"], column
    assert "Columns no row has a value for are left out: speedup, t_kernel ms, t_ref ms" in interpret
    for column in ("speedup", "t_kernel ms", "t_ref ms", "compile s"):
        assert column in heads["device"], column
    for column in ("failure", "error"):  # the device run's best kernels are all correct
        assert column in heads["interpret"] and column not in heads["device"], column
    suite = _table(reports["suite"].read_text(), "tasks")
    cells = re.findall(r'<td class="err" data-v="[^"]*"><span title="([^"]*)">([^<]*)</span>', suite)
    cells = [(html.unescape(full), html.unescape(shown)) for full, shown in cells]
    assert cells and all(len(shown) <= 180 for _, shown in cells)
    assert any(len(full) > 180 and shown.endswith("...") for full, shown in cells)  # cut, full on hover
    assert ">seed_tpu.py</a>" in suite and not re.search(r">[0-9a-f]{40,}\.py</a>", suite)


def test_one_series_label_method_target_everywhere(reports):
    """Every chart, legend and table of a run names its series the same way: method · target."""
    page = _plain(reports["suite"].read_text())
    series = {"run:seed · gpu", "run:seed · tpu"}
    both = f'"y":[{_js("run:seed · gpu")},{_js("run:seed · tpu")}]'
    for chart in ("status-chart", "rates-chart", "failures-chart"):
        figure = page[page.index(f'"{chart}"'):]
        assert both in figure[:20000], chart
    compile_chart = page[page.index('"compile-chart"'):]
    assert {json.loads(n) for n in re.findall(r'"name":("run:[^"]+")', compile_chart)} == series
    assert set(re.findall(r"<td>(run:seed · \w+)</td>", _table(page, "metrics"))) == series
    assert set(re.findall(r"<td data-v=\"(run:[^\"]+)\">", _table(page, "tasks"))) == series
    assert "[tpu]" not in page and "[gpu]" not in page  # the old "method [target]" labels
    device = _plain(reports["device"].read_text())
    for chart in ("speedup-chart", "fast-p-chart", "roofline-chart", "compile-chart"):
        figure = device[device.index(f'"{chart}"'):]
        assert f'"name":{_js("best_of_n · gpu")}' in figure[:30000], chart
    assert f'"name":{_js("best_of_n · gpu fast_1@N")}' in device


def test_axes_that_count_samples_have_integer_ticks(reports):
    from jaxbench.report.data import load_run
    from jaxbench.report.html import fast_p_at_n_figure, nice_step, status_figure

    for step_top, step in ((4, 1), (8, 1), (12, 2), (50, 5), (144, 20), (1000, 100)):
        assert nice_step(step_top) == step
    agent = load_run(reports["agent"].parent.parent / "agent")
    axis = fast_p_at_n_figure(agent).layout.xaxis
    assert list(axis.tickvals) == list(range(1, 9)) and all(isinstance(t, int) for t in axis.tickvals)
    assert list(axis.ticktext) == [str(n) for n in range(1, 9)]
    suite = load_run(reports["suite"].parent.parent / "suite")
    status = status_figure(suite).layout.xaxis
    assert status.dtick == 5 and status.tickformat == "d" and status.tick0 == 0


def test_task_labels_are_short_unique_and_full_names_are_on_hover(reports):
    from jaxbench.report.html import task_labels
    from jaxbench.tasks import list_tasks

    ids = [t.id for t in list_tasks()]
    labels = task_labels(ids)
    assert len(set(labels.values())) == len(ids) and max(len(v) for v in labels.values()) <= 22
    assert labels["46k_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp"] == "46k_conv2d_groupnorm_…"
    assert task_labels(["abcdefghijklmnopqrstuvwxyz_1", "abcdefghijklmnopqrstuvwxyz_2"], 10) == {
        "abcdefghijklmnopqrstuvwxyz_1": "abcdefghijklmnopqrstuvwxyz_1",
        "abcdefghijklmnopqrstuvwxyz_2": "abcdefghijklmnopqrstuvwxyz_2"}
    page = _plain(reports["suite"].read_text())
    grid = page[page.index('"task-status-chart"'):]
    grid = grid[:grid.index("</script>")]
    assert r"46k_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp\u003cbr\u003e" in grid  # hover
    assert _js("46k_conv2d_groupnorm_…") in grid  # the axis


def _check_layout(found: dict, tasks: int, min_px_per_task: float = 18.0) -> dict[str, float]:
    """Asserts the page reads in its window; returns the figures measured (px per task of each
    per-task chart, the task table's width)."""
    window = found["window"]["width"]
    assert found["console_errors"] == []
    assert found["page"]["scrollWidth"] <= window, "the page scrolls sideways"
    table = found["table"]
    assert table["scrollWidth"] <= window and table["right"] <= window, table
    figures = {"table width": table["scrollWidth"], "window": window}
    for chart in found["charts"]:
        name, svg = chart["id"], chart["svg"]
        assert svg and inside(svg, chart["box"]), f"{name}: the chart overflows its box"
        assert chart["titles"] or name == "task-status-chart", f"{name}: no axis title"
        for part in chart["titles"] + chart["ticks"]:
            assert inside(part, svg), f"{name}: {part['text']!r} is cut off"
        if chart["legend"] is not None:
            assert inside(chart["legend"], svg), f"{name}: its legend is cut off"
            assert not overlap(chart["legend"], chart["plot"]), f"{name}: its legend covers the plot"
        if chart["tasks"] is not None:
            assert chart["tasks"] == tasks and chart["yticks"] == tasks, f"{name}: a task without a row label"
            per_task = chart["plot"]["height"] / tasks
            assert per_task >= min_px_per_task, f"{name}: {per_task:.1f} px per task"
            figures[f"{name} px/task"] = per_task
    return figures


@pytest.mark.skipif(missing() is not None, reason=f"browser check unavailable: {missing()}")
def test_layout_reads_at_suite_scale_and_small_in_a_1280px_window(reports, tmp_path):
    """The 100-evaluation suite run (50 tasks x 2 targets), a 4-evaluation run and the timed run,
    measured in headless Chromium at 1280 px, and screenshots of the first two."""
    suite = layout(reports["suite"])
    figures = _check_layout(suite, 50)
    assert {c["id"] for c in suite["charts"]} == INTERPRET_CHARTS
    assert figures["task-status-chart px/task"] == figures["tolerance-chart px/task"]  # rows line up
    assert suite["table"]["rows"] == 100 and "speedup" not in suite["table"]["columns"]
    _check_layout(layout(reports["four"]), 4)
    _check_layout(layout(reports["device"]), 5)
    for name in ("suite", "four"):
        shot = tmp_path / f"{name}.png"
        seen = render(reports[name], shot, width=1280, max_height=3000)
        assert seen["console_errors"] == [] and all(c["marks"] > 0 for c in seen["charts"])
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_seeded_method_and_unpriced_costs_are_shown(tmp_path):
    """evolve starts from the shipped seeds (flagged wherever it is named); its only LLM call
    is unpriced (scripted), so its cost reads "unpriced", never "$ 0.00"."""
    from jaxbench.runs import RunDir

    run = RunDir.open(tmp_path / "run", {"command": "optimize", "method": "evolve", "seeded": True,
                                         "model": "scripted:answers", "budget": 2, "mode": "interpret"})
    run.append(evaluation("8p_gemm", "correct", method="evolve", sample=0, mode="interpret"))
    run.append(evaluation("8p_gemm", "incorrect", method="best_of_n", sample=0, mode="interpret"))
    run.append({"type": "llm_call", "task": "8p_gemm", "method": "evolve", "cost": None})
    run.append({"type": "llm_call", "task": "8p_gemm", "method": "best_of_n", "cost": 0.5})
    run.append({"type": "llm_call", "task": "8p_gemm", "method": "best_of_n", "cost": None})
    run.append({"type": "task_done", "task": "8p_gemm", "method": "evolve", "samples": 1,
                "seeded": True})
    run.finish()
    page = write_report(run.path, tmp_path / "r.html").read_text()
    metrics = page[page.index('id="metrics"'):page.index("</table>", page.index('id="metrics"'))]
    rows = {re.search(r"<td>(\w+)", r).group(1): r for r in re.findall(r"<tr><td>.*?</tr>", metrics)}
    flag = "seeded (starts from the shipped seed kernels)</span>"
    assert flag in rows["evolve"] and "data-seeded" not in rows["best_of_n"]
    assert "<th>cost</th>" in metrics and "$ 0.00" not in metrics
    assert "<td>unpriced</td>" in rows["evolve"]
    assert "<td>$ 0.50 (+1 unpriced call)</td>" in rows["best_of_n"]
    tasks = page[page.index('id="tasks"'):]
    assert tasks.count("data-seeded") == 1  # evolve's row; best_of_n's is not flagged
    assert "method evolve, seeded: starts from the shipped seed kernels" in page  # the header


def test_unseeded_run_without_llm_calls_has_no_flag_or_cost(reports):
    text = reports["interpret"].read_text()
    assert "data-seeded" not in text and "<th>cost</th>" not in text


def test_llm_calls_and_evaluation_time_table(tmp_path):
    """The usage table of report_runs.usage_run: kernel and plan calls apart, the same cells as
    the terminal's, evaluation time without the reused verdict."""
    from report_runs import usage_run

    page = write_report(usage_run(tmp_path / "run"), tmp_path / "r.html").read_text()
    assert "<h2>LLM calls and evaluation time per method · target</h2>" in page
    table = _table(page, "usage")
    heads = re.findall(r"<th>([^<]+)</th>", table)
    assert heads == ["method · target", "calls", "failed", "latency p50", "latency p90", "latency total",
                     "tokens in / out", "cached input", "cost", "evaluations", "eval time", "eval p50"]
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", r)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table[table.index("<tbody>"):])]
    assert rows == [
        ["autocomp · tpu", "5 kernel (1 cached)", "1", "5.00 s", "8.80 s", "22.0 s", "5,000 / 1,100",
         "20.0% (2 of 4 calls)", "$ 0.06 (+1 unpriced call)", "3 + 1 reused + 1 no kernel", "18.0 s",
         "5.00 s"],
        ["", "2 plan", "0", "2.00 s", "2.80 s", "4.00 s", "1,000 / 100", "50.0%", "$ 0.01", "", "", ""],
        ["", "7 all (1 cached)", "1", "3.50 s", "8.00 s", "26.0 s", "6,000 / 1,200", "30.0% (4 of 6 calls)",
         "$ 0.07 (+1 unpriced call)", "", "", ""],
        ["best_of_n · tpu", "2 kernel", "0", "2.00 s", "2.40 s", "4.00 s", "1,700 / 1,000", "n/a", "$ 0.30",
         "2", "10.0 s", "5.00 s"],
    ]


def test_run_without_llm_calls_has_the_evaluation_time_only(reports):
    page = reports["interpret"].read_text()
    assert "<h2>Evaluation time per method · target</h2>" in page and "LLM calls" not in page
    table = _table(page, "usage")
    assert re.findall(r"<th>([^<]+)</th>", table) == ["method · target", "evaluations", "eval time",
                                                       "eval p50"]
    assert ('<td class="nowrap">run:seed · tpu</td><td>5</td><td class="num">45.0 s</td>'
            '<td class="num">9.00 s</td>' in table)


# -- the report's small things: colors, units, the interpret-mode chart, empty runs, skipped
# kernel files, the page's size ---------------------------------------------------------------

def _hue(color: str) -> float:
    import colorsys

    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hsv(r, g, b)[0] * 360


def test_failing_statuses_are_red_or_orange_everywhere(reports):
    """Every status but correct is a red, orange or brown (hue 0-45 or 340-360 degrees), in the
    status chart, the task grid, the pills and the sample view alike (one table of colors)."""
    from jaxbench.report.html import STATUS_COLORS

    assert _hue(STATUS_COLORS["correct"]) > 90
    for status, color in STATUS_COLORS.items():
        if status != "correct":
            assert _hue(color) <= 45 or _hue(color) >= 340, (status, color, _hue(color))
    from jaxbench.report.html import CATEGORY_COLORS

    for category, color in CATEGORY_COLORS.items():  # every category is a failure
        assert _hue(color) <= 45 or _hue(color) >= 340, (category, color, _hue(color))
    page = reports["suite"].read_text()
    for chart in ("status-chart", "task-status-chart"):
        figure = page[page.index(f'"{chart}"'):]
        figure = figure[:figure.index("</script>")]
        pattern = r'"color":"(#[0-9a-f]{6})"[^{}]*\},(?:"mode":"markers",)?"name":"(\w+)"'
        used = set(re.findall(pattern, figure))
        assert ("#b2182b", "compile_error") in used, chart  # compile_error is no longer purple
        assert all(color == STATUS_COLORS[status] for color, status in used), used
    pills = re.findall(r'<span class="pill" style="background:(#[0-9a-f]{6})">(\w+)', page)
    assert pills and all(STATUS_COLORS[s] == c for c, s in pills)


def test_duration_columns_have_one_unit(tmp_path):
    """Latencies of 2 s and 12 min in one column are both written in minutes (the column's
    unit is its longest value's); in the HTML and terminal tables alike."""
    from jaxbench.report import usage
    from jaxbench.runs import RunDir

    assert usage.seconds_text(2.0) == "2.00 s" and usage.seconds_text(720.0) == "12.0 min"
    assert usage.seconds_text(2.0, "min") == "0.03 min"
    run = RunDir.open(tmp_path / "run", {"command": "optimize", "method": "best_of_n+evolve",
                                         "model": "scripted:x", "budget": 1, "mode": "interpret"})
    for method, latency, wall in (("best_of_n", 2.0, 1.5), ("evolve", 720.0, 2400.0)):
        run.append({"type": "llm_call", "task": "8p_gemm", "method": method, "step": "s0", "kind": "kernel",
                    "latency_s": latency, "cost": None, "input_tokens": 10, "output_tokens": 5})
        run.append(evaluation("8p_gemm", "correct", method=method, sample=0, mode="interpret",
                              target="tpu", wall_s=wall))
    run.finish()
    page = write_report(run.path, tmp_path / "r.html").read_text()
    table = _table(page, "usage")
    heads = re.findall(r"<th>([^<]+)</th>", table)
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", r)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table[table.index("<tbody>"):])]
    for column in ("latency p50", "latency total", "eval time", "eval p50"):
        cells = [r[heads.index(column)] for r in rows]
        units = {c.split()[-1] for c in cells}
        assert len(units) == 1, (column, cells)
    assert [r[heads.index("latency p50")] for r in rows] == ["0.03 min", "12.0 min"]
    assert [r[heads.index("eval time")] for r in rows] == ["0.03 min", "40.0 min"]
    terminal = CliRunner().invoke(main, ["report", str(run.path)]).stdout
    assert "0.03 min" in terminal and "12.0 min" in terminal and "2.00 s" not in terminal


def test_interpret_mode_per_task_chart_is_error_over_tolerance(reports):
    """Without timings, the chart beside the status grid shows each correct kernel's error
    over its tolerance (1 = it would fail), not compile times; compile times move below."""
    from jaxbench.report.data import load_run
    from jaxbench.report.html import TaskRows, task_labels, tolerance_figure

    page = reports["suite"].read_text()
    beside = page[page.index('<div class="per-task">'):]
    beside = beside[:beside.index('<div class="charts" style="margin-top:16px">')]
    assert 'data-chart="tolerance-chart"' in beside and 'data-chart="compile-chart"' not in beside
    assert "tolerance of each correct kernel (1 = fails)" in beside
    run = load_run(reports["suite"].parent.parent / "suite")
    rows = TaskRows(run.task_ids, task_labels(run.task_ids), 22, 60)
    fig = tolerance_figure(run, rows)
    drawn = sorted(x for trace in fig.data for x in trace.x)
    assert drawn == sorted(e.tol_fraction for e in run.evaluations if e.status == "correct")
    assert fig.layout.shapes[0].x0 == 1.0  # the tolerance line


def test_empty_run_draws_no_empty_axes(tmp_path):
    from jaxbench.runs import RunDir

    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed", "target": "tpu"})
    page = write_report(run.path, tmp_path / "r.html").read_text()
    assert "Plotly.newPlot" not in page and "<script src=" not in page and "data-chart" not in page
    assert 'id="no-evaluations"' in page and "No evaluations in this run directory yet" in page


def test_skipped_kernel_files_are_recorded_and_reported(tmp_path):
    """`jaxbench run --kernels DIR` records the files it leaves out (misnamed, another target)
    as one kernels_skipped event (not twice on resume); the report, its JSON and the terminal
    name them."""
    from jaxbench.contract import Settings
    from jaxbench.runs import RunDir, directory_jobs, run_jobs
    from jaxbench.tasks import get_task

    kernels = tmp_path / "kernels"
    kernels.mkdir()
    seed = get_task("8p_gemm").kernel_files()[("seed", "tpu")].read_text()
    (kernels / "8p_gemm.py").write_text(seed)
    (kernels / "gemm.py").write_text(seed)  # misnamed: no such task
    (kernels / "12p_rmsnorm.py").write_text(seed.replace('TARGET = "tpu"', 'TARGET = "gpu"'))
    config = {"command": "run", "kernels": str(kernels), "suite": None, "tasks": None, "target": "tpu",
              "mode": "interpret", "size": "small", "trials": 1}
    run = RunDir.open(tmp_path / "run", config)
    jobs = directory_jobs(kernels, None, ("tpu",))
    assert [j.task for j in jobs] == ["8p_gemm"]
    # already evaluated (a resumed run): run_jobs evaluates nothing, and records the skipped files
    run.append(evaluation("8p_gemm", "correct", mode="interpret", target="tpu", job=jobs[0].key, kind="file"))
    for _ in range(2):
        run_jobs(jobs, run, Settings.of(mode="interpret", size="small"), workers=1)
    skipped = [e for e in run.events() if e.get("type") == "kernels_skipped"]
    assert len(skipped) == 1 and skipped[0]["directory"] == str(kernels)
    assert [f.split(" (")[0] for f in skipped[0]["files"]] == ["12p_rmsnorm.py", "gemm.py"]
    run.finish()
    page = write_report(run.path, tmp_path / "r.html").read_text()
    note = re.search(r'<p class="warn" id="skipped">(.*?)</p>', page).group(1)
    assert "2 kernel files in the kernel directory were not evaluated" in note and "gemm.py (" in note
    assert "12p_rmsnorm.py (TARGET gpu, not selected by --target)" in html.unescape(note)
    summary = json.loads(CliRunner().invoke(main, ["report", str(run.path), "--json"]).stdout)
    assert [f.split(" (")[0] for f in summary["skipped_files"]] == ["12p_rmsnorm.py", "gemm.py"]
    assert "were not evaluated: 12p_rmsnorm.py" in CliRunner().invoke(main, ["report", str(run.path)]).stdout


def test_pages_of_a_folder_share_one_plotly_file(tmp_path):
    """A two-evaluation run's page is small: the library is one file beside it, shared with a
    comparison page written to the same folder."""
    from jaxbench.report import compare, write_comparison_html

    a = interpret_run(tmp_path / "a", {"12p_rmsnorm": "correct", "8p_gemm": "incorrect"})
    b = interpret_run(tmp_path / "b", {"12p_rmsnorm": "correct", "8p_gemm": "correct"})
    out = tmp_path / "pages"
    report = write_report(a, out / "a.html")
    comparison = write_comparison_html(compare(a, b), out / "compare.html")
    assert report.stat().st_size < 300_000 and comparison.stat().st_size < 300_000
    assert len(list(out.glob("plotly-*.min.js"))) == 1
    for page in (report, comparison):
        src = re.findall(r'<script src="([^"]+)"', page.read_text())
        assert len(src) == 1 and (out / src[0]).stat().st_size > 3_000_000


def test_judge_warnings_are_shown(tmp_path):
    """What the judge could not decide and set aside (shared memory over the limit by the
    estimate only, a tool's own crash) is listed in the report and counted on the terminal."""
    from jaxbench.report.summary import summarize
    from jaxbench.runs import RunDir

    run = RunDir.open(tmp_path / "run", {"command": "run", "kernels": "seed", "target": "gpu",
                                         "mode": "interpret", "size": "small"})
    run.append(evaluation("l1_matmul", "correct", mode="interpret", warnings=[
        "smem_uncertain: pallas_call #0 at size 'small': its dots' operands need an estimated 192 "
        "KiB of shared memory, over the chip's 163 KiB, but Triton surely needs only 32 KiB"]))
    run.append(evaluation("l1_relu", "correct", mode="interpret", warnings=[
        "tool fault: the TPU interpreter crashed inside its own code", "an unrelated warning"]))
    run.append(evaluation("l1_exp", "correct", mode="interpret"))
    run.finish(wall_s=1.0)
    warned = summarize(run.path)["judge_warnings"]
    assert warned["counts"] == {"smem_uncertain": 1, "tool fault": 1}
    page = write_report(run.path, tmp_path / "r.html").read_text()
    assert 'id="judge-warnings"' in page and "Triton surely needs only 32 KiB" in page
    assert "l1_relu" in page.split('id="judge-warnings"')[1]


def test_a_run_timed_with_other_options_says_so_in_its_header(tmp_path):
    from jaxbench.runs import RunDir

    for name, config in (("other", {"command": "run", "timing": {"device_reps": 20}}),
                         ("default", {"command": "run"})):
        run = RunDir.open(tmp_path / name, config)
        run.append(evaluation("12p_rmsnorm", "correct", times=(1.0, 0.5), kind="seed"))
        run.finish()
        text = write_report(run.path, tmp_path / f"{name}.html").read_text()
        said = "--timing device_reps=20 (not the default timing" in html.unescape(text)
        assert said == (name == "other"), name


def test_a_replay_run_says_its_inputs_were_public_in_its_header(tmp_path):
    """`jaxbench run --replay`: the header names the run replayed and says the verdicts are not
    hardened against a kernel that knows its inputs; a run of its own secret says nothing."""
    from jaxbench.runs import Replay, RunDir

    source = RunDir.open(tmp_path / "source", {"command": "run"})
    source.finish()
    for name, replay in (("replay", Replay.of(source.path)), ("own", None)):
        run = RunDir.open(tmp_path / name, {"command": "run"}, replay=replay)
        run.append(evaluation("12p_rmsnorm", "correct", times=(1.0, 0.5), kind="seed"))
        run.finish()
        text = html.unescape(write_report(run.path, tmp_path / f"{name}.html").read_text())
        said = (f"<dt>inputs</dt><dd>replay of {source.path} (its revealed secret" in text
                and "NOT hardened against a kernel that knows its inputs" in text)
        assert said == (name == "replay"), name
