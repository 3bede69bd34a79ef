"""``jaxbench report RUN_DIR --html FILE``: one self-contained HTML page of a run.

The charts are Plotly figures (the ``results`` extra). plotly.js is written into the page
once, so the file opens without a network. Every chart is drawn from the run's events;
tasks are in the registry's catalogue order. Interpret-mode runs (no timings) get the
statuses, errors, compile times and correctness rates; the timing charts say why they are
absent instead of drawing empty axes. A method that starts from the shipped seed kernels is
flagged wherever it is named, and LLM costs say "unpriced" rather than $0 for calls without a
price.
"""

from __future__ import annotations

import html
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

from jaxbench.report import metrics
from jaxbench.report.data import (
    STATUS_ORDER,
    RunData,
    compiled,
    load_run,
    method_of,
    task_figures,
    task_sort_value,
)

STATUS_COLORS = {
    "correct": "#2ca02c", "incorrect": "#d62728", "runtime_error": "#ff7f0e",
    "compile_error": "#9467bd", "rejected": "#8c564b", "no_pallas": "#e377c2",
    "timeout": "#7f7f7f", "crashed": "#17becf", "unverified": "#bcbd22",
}
PLOT_CONFIG = {"displaylogo": False, "responsive": True}

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 24px; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 4px; } h2 { font-size: 1.15em; margin-top: 28px; }
.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 0.9em; }
.facts dt { color: #666; } .facts dd { margin: 0; font-family: ui-monospace, monospace; }
.pill { display: inline-block; padding: 1px 8px; margin: 2px; border-radius: 10px; color: #fff;
        font-size: 0.85em; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 16px; }
.chart-box { border: 1px solid #ddd; border-radius: 6px; padding: 8px; min-width: 0; align-self: start; }
.chart-box.wide { grid-column: 1 / -1; }
.chart-box h3 { font-size: 0.95em; margin: 0 0 4px 0; }
.note { color: #666; font-style: italic; font-size: 0.9em; padding: 16px; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; position: sticky; top: 0; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[data-dir=asc]::after { content: ' \\25B2'; }
table.sortable th[data-dir=desc]::after { content: ' \\25BC'; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.err { max-width: 420px; font-family: ui-monospace, monospace; font-size: 0.9em; color: #a00; }
pre { max-height: 360px; overflow: auto; background: #fafafa; padding: 6px; font-size: 0.9em; }
.warn { background: #fff4e5; border-left: 4px solid #ff9800; padding: 6px 10px; }
.flag { display: inline-block; margin-left: 6px; padding: 0 6px; border-radius: 4px;
        background: #fff4e5; border: 1px solid #ff9800; font-size: 0.85em; white-space: nowrap; }
"""

SORT_JS = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var asc = th.dataset.dir !== 'asc';
      table.querySelectorAll('th').forEach(function (h) { delete h.dataset.dir; });
      th.dataset.dir = asc ? 'asc' : 'desc';
      var numeric = th.dataset.type === 'num';
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function value(row) {
        var cell = row.cells[col];
        var v = cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent.trim();
        if (!numeric) { return v; }
        return v === '' ? null : parseFloat(v);
      }
      rows.sort(function (a, b) {
        var x = value(a), y = value(b);
        if (x === null || x === '') { return (y === null || y === '') ? 0 : 1; }  // empty last
        if (y === null || y === '') { return -1; }
        var c = numeric ? x - y : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def require_plotly() -> Any:
    try:
        import plotly
    except ImportError:
        raise RuntimeError("the HTML report needs plotly: pip install 'jaxbench[results]'") from None
    return plotly


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def fmt(value: Any, spec: str = ".3g", suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:{spec}}{suffix}"


def page(title: str, body: str, *, plotly_js: bool) -> str:
    """A complete HTML document; plotly.js inlined once when ``plotly_js``."""
    script = ""
    if plotly_js:
        from plotly.offline import get_plotlyjs

        script = f"<script>{get_plotlyjs()}</script>"
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style>{script}</head>\n"
            f"<body>\n{body}\n<script>{SORT_JS}</script>\n</body></html>\n")


def chart_box(chart_id: str, title: str, fig: Any, *, note: str | None = None, wide: bool = False,
              height: int = 380) -> str:
    """A titled chart (``fig``) or, when there is nothing to draw, the note saying why."""
    cls = "chart-box wide" if wide else "chart-box"
    if fig is None:
        return (f"<div class=\"{cls}\" data-chart-missing=\"{esc(chart_id)}\"><h3>{esc(title)}</h3>"
                f"<div class=\"note\">{esc(note)}</div></div>")
    import plotly.io as pio

    fig.update_layout(margin=dict(l=60, r=20, t=40, b=40), height=height, template="plotly_white",
                      legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"))
    div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=chart_id,
                      config=PLOT_CONFIG, default_width="100%", default_height=f"{height}px")
    extra = f"<div class=\"note\">{esc(note)}</div>" if note else ""
    return (f"<div class=\"{cls}\"><h3>{esc(title)}</h3>"
            f"<div class=\"chart\" data-chart=\"{esc(chart_id)}\">{div}</div>{extra}</div>")


def link(target: Path, out_dir: Path, label: str) -> str:
    try:
        href = os.path.relpath(target.resolve(), out_dir.resolve())
    except ValueError:
        href = target.resolve().as_uri()
    return f"<a href=\"{esc(Path(href).as_posix())}\">{esc(label)}</a>"


# ---------------------------------------------------------------- the run's figures

def _series_best(run: RunData) -> dict[str, dict[str, dict[str, Any]]]:
    """series -> task -> best evaluation."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for task, series, best, _ in run.best_rows():
        out.setdefault(series, {})[task] = best
    return out


def status_figure(run: RunData) -> Any:
    import plotly.graph_objects as go

    counts: dict[str, Counter[str]] = {}
    for e in run.evaluations:
        counts.setdefault(run.series_of(e), Counter())[e.get("status") or "?"] += 1
    series = sorted(counts)
    fig = go.Figure()
    for status in STATUS_ORDER[::-1]:
        ys = [counts[s].get(status, 0) for s in series]
        if any(ys):
            fig.add_bar(name=status, x=series, y=ys, marker_color=STATUS_COLORS.get(status))
    fig.update_layout(barmode="stack", yaxis_title="evaluations")
    return fig


def speedup_figure(run: RunData, best: dict[str, dict[str, dict[str, Any]]]) -> Any:
    """Best speedup per task and series on a log axis, bars from the 1x line; tasks without a
    correct, timed kernel are marked with an x at 1x and their status."""
    import plotly.graph_objects as go

    tasks = run.task_ids
    fig = go.Figure()
    failed_x, failed_text = [], []
    for series, by_task in sorted(best.items()):
        xs, ys, speeds, hover = [], [], [], []
        for task in tasks:
            e = by_task.get(task)
            if e is None:
                continue
            s = e.get("speedup") if e.get("status") == "correct" else None
            if s:
                xs.append(task)
                ys.append(s - 1.0)
                speeds.append(s)
                hover.append(f"{task}<br>{series}<br>{s:.3g}x (t_ref {fmt(e.get('t_ref_ms'))} ms, "
                             f"t_kernel {fmt(e.get('t_kernel_ms'))} ms)")
            else:
                failed_x.append(task)
                failed_text.append(f"{task}<br>{series}<br>{e.get('status')}"
                                   + (" (not timed)" if e.get("status") == "correct" else ""))
        if xs:
            fig.add_bar(name=series, x=xs, y=ys, base=1.0, customdata=speeds,
                        hovertext=hover, hoverinfo="text")
    if failed_x:
        fig.add_scatter(name="no correct timed kernel", x=failed_x, y=[1.0] * len(failed_x),
                        mode="markers", marker=dict(symbol="x", size=11, color="#d62728"),
                        hovertext=failed_text, hoverinfo="text")
    fig.add_hline(y=1.0, line_dash="dash", line_color="#444", annotation_text="1x (XLA)",
                  annotation_position="top left")
    fig.update_layout(barmode="group", yaxis_type="log", yaxis_title="speedup over XLA (log)",
                      xaxis=dict(categoryorder="array", categoryarray=tasks, tickangle=_angle(tasks)))
    return fig


def _angle(tasks: list[str]) -> int | None:
    """Task labels slanted only when there are many of them."""
    return -45 if len(tasks) > 6 else None


def fast_p_figure(run: RunData) -> Any:
    """fast_p over p: the fraction of tasks whose best kernel is correct with speedup > p."""
    import plotly.graph_objects as go

    samples = run.samples()
    best = {m: {t: (metrics.best_speedup(_as_samples(seq)) is not None,
                    metrics.best_speedup(_as_samples(seq))) for t, seq in by_task.items()}
            for m, by_task in samples.items()}
    top = max((s for m in best.values() for _, s in m.values() if s), default=1.0)
    ps = sorted({0.0, 1.0, *[round(top * 1.1 * i / 200, 4) for i in range(201)],
                 *[s for m in best.values() for _, s in m.values() if s]})
    fig = go.Figure()
    for name, results in best.items():
        fig.add_scatter(name=name, x=ps, y=[metrics.fast_p(results, p) for p in ps],
                        mode="lines", line_shape="hv")
    fig.add_vline(x=1.0, line_dash="dash", line_color="#444", annotation_text="p = 1")
    fig.update_layout(xaxis_title="p (speedup threshold)", yaxis_title="fast_p",
                      yaxis=dict(range=[0, 1.05], tickformat=".0%"))
    return fig


def _as_samples(seq: list[dict[str, Any]]) -> list[metrics.Sample]:
    return [(e.get("status") == "correct", e.get("speedup")) for e in seq]


def fast_p_at_n_figure(run: RunData) -> Any:
    """fast_1@N (timed) or correct@N (interpret) over N per method; fast_0@N dotted."""
    import plotly.graph_objects as go

    samples = {m: {t: _as_samples(seq) for t, seq in by_task.items()}
               for m, by_task in run.samples().items()}
    timed = run.timed
    fig = go.Figure()
    for name, by_task in samples.items():
        longest = max((len(s) for s in by_task.values()), default=0)
        ns = list(range(1, longest + 1))
        if timed:
            fig.add_scatter(name=f"{name} fast_1@N", x=ns, mode="lines+markers",
                            y=[metrics.fast_p_at_n(by_task, 1.0, n) for n in ns])
            fig.add_scatter(name=f"{name} fast_0@N", x=ns, mode="lines", line_dash="dot",
                            y=[metrics.fast_p_at_n(by_task, 0.0, n) for n in ns])
        else:
            fig.add_scatter(name=f"{name} correct@N", x=ns, mode="lines+markers",
                            y=[sum(any(ok for ok, _ in seq[:n]) for seq in by_task.values())
                               / len(by_task) for n in ns])
    fig.update_layout(xaxis_title="N (samples per task)",
                      yaxis=dict(range=[0, 1.05], tickformat=".0%",
                                 title="fast_p@N" if timed else "correct@N"))
    return fig


def rates_figure(run: RunData) -> Any:
    import plotly.graph_objects as go

    samples = run.samples()
    names = list(samples)
    flat = {m: [e for seq in by_task.values() for e in seq] for m, by_task in samples.items()}
    fig = go.Figure()
    fig.add_bar(name="compile rate", x=names, marker_color="#1f77b4",
                y=[metrics.rate([compiled(e) for e in flat[m]]) for m in names])
    fig.add_bar(name="correct rate", x=names, marker_color="#2ca02c",
                y=[metrics.rate([e.get("status") == "correct" for e in flat[m]]) for m in names])
    fig.update_layout(barmode="group", yaxis=dict(range=[0, 1.05], tickformat=".0%",
                                                  title="fraction of samples"))
    return fig


def roofline_figure(run: RunData) -> tuple[Any, str | None]:
    """Arithmetic intensity vs achieved FLOP/s for every correct, timed kernel (and its XLA
    reference, hollow), under the roofs of each device with known peak figures."""
    import plotly.graph_objects as go

    from jaxbench.backends.peaks import peak_for

    points: dict[str, list[tuple[float, float, str]]] = {}
    ref_points: list[tuple[float, float, str]] = []
    roofs: dict[str, tuple[float, float]] = {}
    for e in run.evaluations:
        if e.get("status") != "correct" or not e.get("t_kernel_ms"):
            continue
        flops, nbytes = task_figures(e["task"], e.get("size") or "small")
        if not flops or not nbytes:
            continue
        ai = flops / nbytes
        kind = e.get("device_kind") or "?"
        peaks = (e.get("peak_flops"), e.get("peak_bytes_per_s"))
        if not all(peaks):
            peaks = peak_for(kind) or (None, None)
        if all(peaks):
            roofs[kind] = peaks  # type: ignore[assignment]
        points.setdefault(run.series_of(e), []).append(
            (ai, flops / (e["t_kernel_ms"] / 1e3), f"{e['task']} ({kind}): {e.get('speedup', 0):.3g}x"))
        if e.get("t_ref_ms"):
            ref_points.append((ai, flops / (e["t_ref_ms"] / 1e3), f"{e['task']}: XLA reference"))
    if not points:
        return None, None
    fig = go.Figure()
    ais = [p[0] for pts in points.values() for p in pts]
    lo, hi = min(ais) / 4, max(ais) * 4
    for kind, (peak_flops, peak_bw) in sorted(roofs.items()):
        ridge = peak_flops / peak_bw
        xs = sorted({lo, hi, min(max(ridge, lo), hi)})
        fig.add_scatter(name=f"roof: {kind}", x=xs, y=[min(peak_flops, x * peak_bw) for x in xs],
                        mode="lines", line=dict(color="#444", dash="dash"))
    for series, pts in sorted(points.items()):
        fig.add_scatter(name=series, x=[p[0] for p in pts], y=[p[1] for p in pts], mode="markers",
                        marker=dict(size=9), hovertext=[p[2] for p in pts], hoverinfo="text")
    if ref_points:
        fig.add_scatter(name="XLA reference", x=[p[0] for p in ref_points],
                        y=[p[1] for p in ref_points], mode="markers",
                        marker=dict(size=9, symbol="circle-open", color="#555"),
                        hovertext=[p[2] for p in ref_points], hoverinfo="text")
    fig.update_layout(xaxis=dict(type="log", title="arithmetic intensity (FLOP/byte)"),
                      yaxis=dict(type="log", title="achieved FLOP/s"))
    note = None if roofs else "no peak figures known for this device: points without roofs"
    return fig, note


def compile_time_figure(run: RunData) -> Any:
    import plotly.graph_objects as go

    tasks = run.task_ids
    per: dict[str, dict[str, list[float]]] = {}
    for e in run.evaluations:
        if isinstance(e.get("compile_s"), (int, float)):
            per.setdefault(run.series_of(e), {}).setdefault(e["task"], []).append(e["compile_s"])
    if not per:
        return None
    fig = go.Figure()
    for series, by_task in sorted(per.items()):
        xs = [t for t in tasks if t in by_task]
        fig.add_bar(name=series, x=xs, y=[sum(by_task[t]) / len(by_task[t]) for t in xs])
    fig.update_layout(barmode="group", yaxis_title="compile time (s, mean)",
                      xaxis=dict(categoryorder="array", categoryarray=tasks, tickangle=_angle(tasks)))
    return fig


# ---------------------------------------------------------------- header and table

def secret_text(run: RunData) -> str:
    from jaxbench.report.data import secret_verified

    commitment = run.manifest.get("secret_sha256") or "?"
    verified = secret_verified(run)
    state = {None: "run still open: secret not revealed yet",
             True: "revealed at run_end and matches", False: "REVEALED SECRET DOES NOT MATCH"}[verified]
    return f"sha256 {commitment} ({state})"


def _hardware_text(hardware: dict[str, Any]) -> str:
    """Where the run directory was made: platform, device kind, device and CPU counts."""
    platform, kind = hardware.get("platform", "?"), hardware.get("device_kind")
    device = platform if not kind or kind == platform else f"{platform} ({kind})"
    return (f"{device} x{hardware.get('device_count', '?')}, {hardware.get('cpu_count', '?')} CPUs, "
            f"{hardware.get('machine', '?')}")


def seeded_flag() -> str:
    from jaxbench.report.summary import SEEDED_FLAG

    return (f"<span class=\"flag\" data-seeded title=\"its samples build on the task's shipped "
            f"seed kernels: compare it with an unseeded method knowingly\">{esc(SEEDED_FLAG)}</span>")


def method_label(name: str, seeded: bool) -> str:
    """A method's name, escaped, with the seeded flag when it starts from the seed kernels."""
    return esc(name) + (f" {seeded_flag()}" if seeded else "")


def header(run: RunData, summary: dict[str, Any]) -> str:
    m = run.manifest
    versions = m.get("versions") or {}
    hardware = m.get("hardware") or {}
    devices = sorted({e.get("device_kind") for e in run.evaluations
                      if e.get("mode") == "device" and e.get("device_kind")})
    config = run.config
    facts = [
        ("run", f"{run.path} ({config.get('command', '?')}, created {m.get('created_at', '?')})"),
        ("suite", ", ".join(run.suites) or "-"),
        ("target", ", ".join(run.targets) or config.get("target", "-")),
        ("mode / size", f"{', '.join(run.modes) or '-'} / {config.get('size', '-')}"),
        ("hardware", _hardware_text(hardware) + (f"; timed on {', '.join(devices)}" if devices else "")),
        ("JAX", f"jax {versions.get('jax', '?')}, jaxlib {versions.get('jaxlib', '?')}, "
                f"Python {versions.get('python', '?')}, jaxbench {versions.get('jaxbench', '?')}"),
        ("git sha", m.get("git_sha") or "unknown"),
        ("secret commitment", secret_text(run)),
    ]
    if config.get("model"):
        seeded = ", seeded: starts from the shipped seed kernels" if config.get("seeded") else ""
        facts.append(("model", f"{config.get('model')} (method {config.get('method')}{seeded}, "
                               f"budget {config.get('budget')})"))
    counts = Counter(e.get("status") for e in run.evaluations)
    pills = " ".join(f"<span class=\"pill\" style=\"background:{STATUS_COLORS.get(s, '#999')}\">"
                     f"{esc(s)}: {counts[s]}</span>" for s in STATUS_ORDER[::-1] if counts.get(s))
    facts.append(("evaluations", f"{len(run.evaluations)}"))
    out = ["<dl class=\"facts\">"]
    out += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts]
    out.append(f"<dt>statuses</dt><dd>{pills or '-'}</dd></dl>")
    if run.end is None:
        out.append("<p class=\"warn\">This run has not finished (no run_end event): figures "
                   "cover the evaluations written so far.</p>")
    if summary.get("note"):
        out.append(f"<p class=\"warn\">{esc(summary['note'])}</p>")
    out.append(metrics_table(summary))
    return "\n".join(out)


def metrics_table(summary: dict[str, Any]) -> str:
    from jaxbench.report.summary import cost_text

    methods = summary["methods"]
    if not methods:
        return "<p class=\"note\">No evaluations.</p>"
    first = next(iter(methods.values()))
    ns = list(first.get("correct_at", {}))
    cols = ["method", "tasks", "samples", "compile rate", "correct rate"]
    cols += [f"correct@{n}" for n in ns]
    if summary["timed"]:
        cols += [f"fast_0@{n}" for n in ns] + [f"fast_1@{n}" for n in ns]
        cols += ["geomean speedup", "geomean (correct only)"]
    with_llm = any(m.get("llm") for m in methods.values())
    if with_llm:
        cols += ["LLM calls", "cost"]
    rows = []
    for name, m in methods.items():
        cells = [method_label(name, bool(m.get("seeded"))), str(m["tasks"]), str(m["samples"]),
                 fmt(m["compile_rate"], ".0%"), fmt(m["correct_rate"], ".0%")]
        cells += [fmt(m["correct_at"].get(n), ".0%") for n in ns]
        if summary["timed"]:
            cells += [fmt(m["fast_0_at"].get(n), ".0%") for n in ns]
            cells += [fmt(m["fast_1_at"].get(n), ".0%") for n in ns]
            cells += [fmt(m.get("geomean_speedup"), ".3f", "x"),
                      fmt(m.get("geomean_speedup_unfloored"), ".3f", "x")]
        if with_llm:
            llm = m.get("llm") or {}
            cells += [str(llm.get("calls", 0)), esc(cost_text(llm))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    return (f"<h2>Metrics per method</h2><table id=\"metrics\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def task_table(run: RunData, out_dir: Path, seeded: frozenset[str] = frozenset()) -> str:
    """One row per task and series: its best evaluation, sortable by every column. The
    series of a method in ``seeded`` carry the seeded flag."""
    cols = [("#", "num"), ("task", "num"), ("method", "str"), ("status", "str"), ("stage", "str"),
            ("correct / samples", "num"), ("speedup", "num"), ("t_kernel ms", "num"),
            ("t_ref ms", "num"), ("max abs err", "num"), ("err / tol", "num"), ("compile s", "num"),
            ("error", "str"),
            ("kernel", "str"), ("IR", "str")]
    body = []
    for i, (task, series, best, group) in enumerate(run.best_rows()):
        status = best.get("status")
        correct = sum(e.get("status") == "correct" for e in group)
        source, source_path = run.source(best)
        kernel = []
        if source_path is not None:
            kernel.append(link(source_path, out_dir, source_path.name))
        if source is not None:
            kernel.append(f"<details><summary>source</summary><pre>{esc(source)}</pre></details>")
        ir = run.ir_files(best)
        ir_links = " ".join(link(p, out_dir, name) for name, p in ir.items())
        message = best.get("message") or ""
        speed = best.get("speedup") if status == "correct" else None
        flagged = bool(group) and method_of(group[0]) in seeded
        cells = [
            (str(i + 1), i, "num"),
            (esc(task), task_sort_value(task), ""),
            (method_label(series, flagged), series, ""),
            (f"<span class=\"pill\" style=\"background:{STATUS_COLORS.get(status, '#999')}\">"
             f"{esc(status)}</span>", status, ""),
            (esc(best.get("stage")), None, ""),
            (f"{correct} / {len(group)}", correct / len(group) if group else 0, "num"),
            (fmt(speed, ".3g", "x"), speed, "num"),
            (fmt(best.get("t_kernel_ms"), ".4g"), best.get("t_kernel_ms"), "num"),
            (fmt(best.get("t_ref_ms"), ".4g"), best.get("t_ref_ms"), "num"),
            (fmt(best.get("max_abs_err"), ".3g"), best.get("max_abs_err"), "num"),
            (fmt(best.get("tol_fraction"), ".2f"), best.get("tol_fraction"), "num"),
            (fmt(best.get("compile_s"), ".3g"), best.get("compile_s"), "num"),
            (f"<span title=\"{esc(message)}\">{esc(message[:200])}"
             f"{'...' if len(message) > 200 else ''}</span>", message, "err"),
            (" ".join(kernel), None, ""),
            (ir_links, None, ""),
        ]
        tds = []
        for content, value, cls in cells:
            attr = f" data-v=\"{esc(value)}\"" if value is not None else ""
            tds.append(f"<td class=\"{cls}\"{attr}>{content}</td>" if cls else f"<td{attr}>{content}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    head = "".join(f"<th data-type=\"{t}\">{esc(c)}</th>" for c, t in cols)
    return (f"<h2>Tasks (best kernel per method; click a column to sort)</h2>"
            f"<table class=\"sortable\" id=\"tasks\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def build(run: RunData, out_dir: Path) -> str:
    """The report page of a run (links are relative to ``out_dir``)."""
    require_plotly()
    from jaxbench.report.summary import summarize

    summary = summarize(run.path)
    best = _series_best(run)
    timed = run.timed
    boxes = [chart_box("status-chart", "Statuses per method", status_figure(run)),
             chart_box("rates-chart", "Compile and correct rates per method", rates_figure(run))]
    if timed:
        boxes.append(chart_box("speedup-chart", "Best speedup per task (log scale, bars from 1x)",
                               speedup_figure(run, best), wide=True, height=440))
        boxes.append(chart_box("fast-p-chart", "fast_p over p (best kernel per task)",
                               fast_p_figure(run)))
    if run.config.get("command") == "optimize":
        title = "fast_p@N over N per method" if timed else "correct@N over N per method"
        boxes.append(chart_box("fast-p-at-n-chart", title, fast_p_at_n_figure(run)))
    if timed:
        roof, roof_note = roofline_figure(run)
        boxes.append(chart_box("roofline-chart", "Roofline (correct, timed kernels)", roof,
                               note=roof_note if roof is not None else "no task FLOP/byte figures"))
    else:
        boxes.append(chart_box(
            "timing-charts", "Speedups, fast_p and roofline", None,
            note="not drawn: this run has no timings (interpret mode checks correctness only; "
                 "speedups need a device)"))
    compile_fig = compile_time_figure(run)
    boxes.append(chart_box("compile-chart", "Compile time per task (mean over its evaluations)",
                           compile_fig, wide=True,
                           note=None if compile_fig is not None else "no evaluation reached compilation"))
    body = [f"<h1>jaxbench report: {esc(run.name)}</h1>", header(run, summary),
            "<h2>Charts</h2>", f"<div class=\"charts\">{''.join(boxes)}</div>",
            task_table(run, out_dir, frozenset(n for n, m in summary["methods"].items()
                                               if m.get("seeded")))]
    return page(f"jaxbench report: {run.name}", "\n".join(body), plotly_js=True)


def write_report(run_dir: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Writes the HTML report of ``run_dir`` to ``out``; returns its path."""
    run = load_run(run_dir)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = build(run, out.parent)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    return out


__all__ = ["build", "chart_box", "page", "require_plotly", "task_table", "write_report"]

