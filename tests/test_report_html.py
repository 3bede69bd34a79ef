"""``jaxbench report --html``: a self-contained page whose charts draw in a real browser.

The browser test renders the page in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium), and is skipped with the reason where they are
absent; the other tests read the HTML itself.
"""

from __future__ import annotations

import re

import pytest
from browser_check import missing, render
from click.testing import CliRunner
from report_runs import device_run, evaluation, interpret_run

from jaxbench.cli import main

pytest.importorskip("plotly", reason="the HTML report needs the results extra (plotly)")

from jaxbench.report.html import write_report  # noqa: E402

TIMED_CHARTS = {"status-chart", "rates-chart", "speedup-chart", "fast-p-chart", "fast-p-at-n-chart",
                "roofline-chart", "compile-chart"}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    device, interpret = device_run(root / "device"), interpret_run(root / "interpret")
    return {"device": write_report(device, root / "out" / "device.html"),
            "interpret": write_report(interpret, root / "out" / "interpret.html")}


def _charts(text: str) -> set[str]:
    return set(re.findall(r'data-chart="([\w-]+)"', text))


def test_timed_report_has_every_chart_and_the_header(reports):
    text = reports["device"].read_text()
    assert _charts(text) == TIMED_CHARTS
    assert text.count("Plotly.newPlot") == len(TIMED_CHARTS)
    for fact in ("suite", "jaxbench", "NVIDIA H200", "jax 0.", "git sha", "secret commitment",
                 "revealed at run_end and matches", "correct: 20", "geomean speedup", "fast_1@1"):
        assert fact in text, fact


def test_report_is_self_contained(reports):
    for path in reports.values():
        text = path.read_text()
        assert not re.search(r'<script[^>]+src=', text), "no external script"
        assert not re.search(r'<link[^>]+href="?https?:', text), "no external stylesheet"
        assert re.search(r"\* plotly\.js v\d+\.\d+\.\d+\n", text)  # the library itself, inlined


def test_interpret_report_keeps_statuses_errors_and_compile_times(reports):
    text = reports["interpret"].read_text()
    assert _charts(text) == {"status-chart", "rates-chart", "compile-chart"}
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
    assert re.search(r'href="(\.\./)+[^"]*/p12_rmsnorm/seed_tpu.py">seed_tpu.py</a>', page)
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
    assert result.exit_code == 2 and "jaxbench[results]" in result.stderr


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
    assert {c["id"] for c in interpret["charts"]} == {"status-chart", "rates-chart", "compile-chart"}
    assert interpret["notes"] == ["timing-charts"]


def test_unfinished_run_says_so(tmp_path):
    path = device_run(tmp_path / "open", finish=False)
    page = write_report(path, tmp_path / "open.html").read_text()
    assert "has not finished" in page and "run still open: secret not revealed yet" in page


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
