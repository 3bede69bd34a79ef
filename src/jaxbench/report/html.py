"""``jaxbench report RUN_DIR --html FILE``: the HTML page of a run.

The charts are Plotly figures (the ``results`` extra). plotly.js is written once beside the
pages of a folder (``plotly-<version>.min.js``, :func:`plotly_script`) and loaded from there, so
the page opens without a network and stays small. An agent run also gets its sample view
beside the page (``NAME.samples.html``, ``sample_view.py``). Every chart is drawn from the
run's events; tasks are in the registry's catalogue order. Interpret-mode runs (no timings) get
the statuses, errors, failure taxonomy, each correct kernel's error over its tolerance,
compile times and correctness rates; the timing charts say why they are absent instead of
drawing empty axes, and a run without evaluations draws no chart at all. Failing statuses and
failure categories are reds, oranges and browns. A method that starts from the shipped seed
kernels is flagged wherever it is named, and LLM costs say "unpriced" rather than $0 for calls
without a price.

The page reads the same for 4 evaluations as for a suite of 100: every chart and table groups
by one series, method · target (``best_of_n · tpu``); per-task charts are horizontal, one row
per task (:data:`ROW_PX` high), with short task labels on the axis and the full name on hover;
margins follow the labels; axes that count samples have integer ticks; the task table leaves
out the columns no row fills and wraps long text (the full text on hover). A run that has not
finished, or whose evaluations are missing, says so in a banner at the top. Under the
metrics, a table says what the run spent per method · target (``usage.py``): its LLM calls,
kernel and plan calls apart (latency, tokens, cached input share, cost), and its evaluation time.
"""

from __future__ import annotations

import html
import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxbench.contract import Category, EvaluationResult, Status
from jaxbench.report import metrics, sample_view, taxonomy
from jaxbench.report.data import (
    STATUS_ORDER,
    RunData,
    compiled,
    is_correct,
    load_run,
    method_of,
    replay_of,
    replay_text,
    task_figures,
    task_sort_value,
)
from jaxbench.report.sample_view import SAMPLE_CSS

if TYPE_CHECKING:
    from jaxbench.report.sample_view import SampleIndex
    from jaxbench.report.summary import Summary

# Correct is green; every other status is a red, orange or brown (hue 0-45 degrees), so a
# failure never reads as a neutral series color: reds for what was refused or wrong, oranges
# for what ran out of time or crashed, amber for unverified (nothing vouched for the outputs).
STATUS_COLORS = {
    Status.CORRECT: "#2ca02c", Status.INCORRECT: "#d62728", Status.RUNTIME_ERROR: "#ff7f0e",
    Status.COMPILE_ERROR: "#b2182b", Status.REJECTED: "#67000d", Status.NO_PALLAS: "#f4a582",
    Status.TIMEOUT: "#fdb863", Status.CRASHED: "#8c510a", Status.UNVERIFIED: "#e6a817",
}
# Failure categories in the same warm family (every one is a failure), the categories of a
# status in that status' color, neighbours in the stacked chart (CATEGORIES order) alternating
# between dark and light, red and orange or brown, so adjacent segments stay apart.
CATEGORY_COLORS = {
    Category.STATIC_POLICY: "#67000d", Category.SOURCE_ERROR: "#fdae6b",
    Category.TRACE_ERROR: "#a50f15", Category.SANDBOX_RULE: "#8c510a",
    Category.NO_PALLAS: "#f4a582", Category.MEMORY_BUDGET: "#e6550d",
    Category.BLOCK_SHAPE: "#fcbba1", Category.TRITON_RULE: "#bf812d", Category.GPU_RACE: "#cb181d",
    Category.OUTSIDE_WORK: "#fed976", Category.COMPILE_ERROR: "#b2182b",
    Category.RUNTIME_ERROR: "#ff7f0e", Category.INCORRECT: "#d62728", Category.NAN_INF: "#fb6a4a",
    Category.TIMEOUT: "#fdb863", Category.CRASHED: "#8c2d04", Category.UNVERIFIED: "#e6a817",
    Category.OTHER: "#dfc27d",
}
SERIES_PALETTE = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880")
PLOT_CONFIG = {"displaylogo": False, "responsive": True, "displayModeBar": False}
ROW_PX = 22      # plot height of one task row (one series); a grouped row adds BAR_PX per series
BAR_PX = 9
SERIES_PX = 34   # plot height per series in the per-series bar charts
FONT_PX = 11     # axis tick labels
CHAR_PX = 6.7    # width of one tick-label character at FONT_PX (generous: the margins must fit)
LABEL_CHARS = 22  # task labels on an axis are cut to this many characters
WINDOW_PX = 1280  # the window width the layout is made for (legends are wrapped for it)

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 24px; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 4px; } h2 { font-size: 1.15em; margin-top: 28px; }
.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 0.9em; }
.facts dt { color: #666; }
.facts dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; min-width: 0; }
.pill { display: inline-block; padding: 1px 8px; margin: 2px; border-radius: 10px; color: #fff;
        font-size: 0.85em; }
.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 6px; border-radius: 2px; }
.pill.missing { color: #444; background: #fff; border: 1px dashed #888; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 16px; }
.per-task { display: flex; gap: 16px; align-items: flex-start; }
.per-task > .chart-box { flex: 1 1 0; }
.per-task > .chart-box.fixed { flex: 0 0 auto; }
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
table#tasks { width: 100%; }
table#usage tr.first td { border-top: 1px solid #bbb; }
table#usage td.num, table#usage td.nowrap { white-space: nowrap; }
table#tasks td:nth-child(2) { min-width: 150px; max-width: 210px; overflow-wrap: anywhere; }
table#tasks td:nth-child(3) { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.err { max-width: 380px; min-width: 240px; font-family: ui-monospace, monospace; font-size: 0.9em;
         color: #a00; overflow-wrap: anywhere; }
td.meaning { max-width: 420px; color: #555; }
td pre { max-width: 560px; }
pre { max-height: 360px; overflow: auto; background: #fafafa; padding: 6px; font-size: 0.9em; }
.warn { background: #fff4e5; border-left: 4px solid #ff9800; padding: 6px 10px; }
.banner { font-weight: 600; font-size: 1.05em; background: #ffebee; border-left-color: #d32f2f; }
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
// Charts are drawn as the page is parsed: redraw each at its box's final width.
window.addEventListener('load', function () {
  if (window.Plotly) {
    document.querySelectorAll('.js-plotly-plot').forEach(function (gd) { Plotly.Plots.resize(gd); });
  }
});
"""


def require_plotly() -> Any:
    try:
        import plotly
    except ImportError:
        raise RuntimeError("the HTML report needs plotly, from the results extra: pip install -e "
                           "'.[results]' in a clone of jaxbench (pip install 'jaxbench[results]' "
                           "from a package index)") from None
    return plotly


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def fmt(value: Any, spec: str = ".3g", suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:{spec}}{suffix}"


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, "..." marking the cut."""
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def plotly_script(out_dir: Path) -> str:
    """Writes plotly.js beside the pages of ``out_dir`` once, as ``plotly-<version>.min.js``
    (shared by every report and comparison written there), and returns its name for the
    pages' ``<script src>``: a relative file, so the pages open offline and a folder of pages
    holds one copy of the library, not one per page."""
    plotly = require_plotly()
    from plotly.offline import get_plotlyjs

    name = f"plotly-{plotly.__version__}.min.js"
    target = Path(out_dir) / name
    text = get_plotlyjs()
    if not target.is_file() or target.stat().st_size != len(text.encode()):
        tmp = target.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(target)
    return name


def page(title: str, body: str, *, plotly_src: str | None = None) -> str:
    """A complete HTML document; with ``plotly_src``, the page loads plotly.js from that file
    (:func:`plotly_script`) before its charts."""
    script = f"<script src=\"{esc(plotly_src)}\"></script>" if plotly_src else ""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}{SAMPLE_CSS}</style>{script}</head>\n"
            f"<body>\n{body}\n<script>{SORT_JS}</script>\n</body></html>\n")


def chart_box(chart_id: str, title: str, fig: Any, *, note: str | None = None, wide: bool = False,
              height: int | None = None, width: int | None = None, tasks: int | None = None) -> str:
    """A titled chart (``fig``) or, when there is nothing to draw, the note saying why. The
    figure's own height, margins and legend are kept (defaults where it sets none); ``width``
    fixes the box's width; ``tasks`` marks a per-task chart (one row per task)."""
    cls = "chart-box wide" if wide else "chart-box"
    if fig is None:
        return (f"<div class=\"{cls}\" data-chart-missing=\"{esc(chart_id)}\"><h3>{esc(title)}</h3>"
                f"<div class=\"note\">{esc(note)}</div></div>")
    import plotly.io as pio

    layout = fig.layout
    height = height or layout.height or 380
    margin = {k: v for k, v in dict(l=60, r=20, t=40, b=40).items() if getattr(layout.margin, k) is None}
    fig.update_layout(height=height, template="plotly_white", margin=margin)
    if layout.legend.orientation is None and layout.legend.x is None:
        fig.update_layout(legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"))
    div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=chart_id, config=PLOT_CONFIG,
                      default_width=f"{width}px" if width else "100%", default_height=f"{height}px")
    extra = f"<div class=\"note\">{esc(note)}</div>" if note else ""
    style = f" style=\"width:{width}px\"" if width else ""
    if width:
        cls += " fixed"
    per_task = f" data-tasks=\"{tasks}\"" if tasks else ""
    return (f"<div class=\"{cls}\"{style}><h3>{esc(title)}</h3>"
            f"<div class=\"chart\" data-chart=\"{esc(chart_id)}\"{per_task}>{div}</div>{extra}</div>")


def link(target: Path, out_dir: Path, label: str) -> str:
    try:
        href = os.path.relpath(target.resolve(), out_dir.resolve())
    except ValueError:
        href = target.resolve().as_uri()
    return f"<a href=\"{esc(Path(href).as_posix())}\">{esc(label)}</a>"


# ---------------------------------------------------------------- axes that read at any scale

def task_labels(tasks: list[str], limit: int = LABEL_CHARS) -> dict[str, str]:
    """Short, unique axis labels: each task ID cut to ``limit`` characters ("…" marks the cut;
    longer where two cut IDs would be equal). The full ID is in every hover."""
    while True:
        labels = {t: t if len(t) <= limit else t[:limit - 1] + "…" for t in tasks}
        if len(set(labels.values())) == len(labels) or limit > 200:
            return labels
        limit += 8


def text_px(texts: Any, font_px: float = FONT_PX) -> int:
    """The width the longest of ``texts`` takes as tick labels (an upper estimate)."""
    longest = max((len(str(t)) for t in texts), default=0)
    return math.ceil(longest * CHAR_PX * font_px / FONT_PX)


def nice_step(top: float, most: int = 10) -> int:
    """An integer tick step (1, 2, 5, 10, 20, 25, 50, ...) giving at most ``most`` ticks up to
    ``top``."""
    for scale in (1, 10, 100, 1000, 10_000):
        for base in (1, 2, 5) if scale == 1 else (1, 2, 2.5, 5):
            step = int(base * scale)
            if step >= 1 and math.ceil(top / step) <= most:
                return step
    return max(1, math.ceil(top / most))


def count_axis(top: float, title: str) -> dict[str, Any]:
    """An axis that counts (samples, evaluations): integer ticks from 0."""
    step = nice_step(max(top, 1))
    return dict(title=dict(text=title), tick0=0, dtick=step, tickformat="d", rangemode="tozero",
                automargin=True)


def n_axis(longest: int, title: str) -> dict[str, Any]:
    """The N axis of @N charts: integer ticks only, 1 and multiples of a nice step."""
    step = nice_step(longest)
    ticks = sorted({1, *range(step, longest + 1, step)})
    return dict(title=dict(text=title), tickmode="array", tickvals=ticks, ticktext=[str(t) for t in ticks],
                range=[0.7, longest + 0.3], automargin=True)


def legend_rows(names: list[str], width: float) -> int:
    """How many rows a horizontal legend of ``names`` takes in ``width`` pixels (estimate)."""
    rows, used = 1, 0.0
    for name in names:
        item = len(name) * CHAR_PX + 46
        if used and used + item > width:
            rows, used = rows + 1, 0.0
        used += item
    return rows


@dataclass(frozen=True)
class TaskRows:
    """The rows of the per-task charts drawn side by side: the same tasks, labels, row height
    and top margin, so that a task's row lines up across them."""

    tasks: list[str]
    labels: dict[str, str]
    row_px: int
    top: int

    @property
    def height(self) -> int:
        return self.top + 16 + self.row_px * max(len(self.tasks), 1)


def legend_top(legend: list[str], width: float) -> int:
    """The top margin of a per-task chart: its legend's rows, then the value axis and title."""
    return 22 * legend_rows(legend, width) + 6 + 54


def grid_top(series: list[str]) -> int:
    """The top margin of the status grid: its column labels, slanted 45 degrees."""
    return math.ceil(text_px(series) * 0.72) + 26


def per_task_layout(fig: Any, rows: TaskRows, *, x_title: str, legend: bool) -> None:
    """One row per task (catalogue order, top to bottom) of ``rows.row_px`` pixels; the value
    axis on top, under the legend; the left margin fits the longest label."""
    n = max(len(rows.tasks), 1)
    fig.update_layout(
        height=rows.height, margin=dict(l=text_px(rows.labels.values()) + 18, r=24, t=rows.top, b=16),
        hoverlabel=dict(align="left"), showlegend=legend,
        legend=dict(orientation="h", x=0, xanchor="left", y=1, yanchor="top", yref="container",
                    traceorder="normal"),
        yaxis=dict(type="category", categoryorder="array", range=[n - 0.5, -0.5], automargin=True,
                   categoryarray=[rows.labels[t] for t in rows.tasks], tickfont=dict(size=FONT_PX)),
        xaxis=dict(side="top", automargin=True, title=dict(text=x_title, standoff=4)))


# ---------------------------------------------------------------- the run's figures

def _series_best(run: RunData) -> dict[str, dict[str, EvaluationResult]]:
    """series -> task -> best evaluation."""
    out: dict[str, dict[str, EvaluationResult]] = {}
    for task, series, best, _ in run.best_rows():
        out.setdefault(series, {})[task] = best
    return out


def series_colors(run: RunData) -> dict[str, str]:
    """One color per series (method · target), the same in every chart that draws series."""
    names = sorted({run.series_of(e) for e in run.evaluations})
    return {name: SERIES_PALETTE[i % len(SERIES_PALETTE)] for i, name in enumerate(names)}


def log_axis(lo: float, hi: float) -> dict[str, Any]:
    """A log axis over [lo, hi] (speedups) ticked at powers of 2 (of 10 over a wide range),
    labelled "0.5x", "1x", "2x", ..."""
    low, high = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    base, low, high = (2, low, high) if high - low <= 9 else \
        (10, math.floor(math.log10(lo)), math.ceil(math.log10(hi)))
    ticks = [base ** k for k in range(low, high + 1)]
    return dict(type="log", tickmode="array", tickvals=ticks, ticktext=[f"{t:g}x" for t in ticks],
                range=[math.log10(ticks[0]) - 0.05, math.log10(ticks[-1]) + 0.05])


def _flat_samples(run: RunData) -> dict[str, list[EvaluationResult]]:
    """series -> its samples (every task's)."""
    return {s: [e for seq in by_task.values() for e in seq] for s, by_task in run.samples().items()}


def series_layout(fig: Any, names: list[str], legend: list[str], width: float) -> None:
    """Height and margins of a chart with one horizontal bar (group) per series: the legend's
    rows on top, the value axis and its title below, the series names on the left."""
    top = 22 * legend_rows(legend, width - text_px(names) - 40) + 24
    plot = max(50, SERIES_PX * len(names))
    fig.update_layout(height=top + plot + 54, margin=dict(l=text_px(names) + 18, r=20, t=top, b=54))


TOP_LEGEND = dict(orientation="h", x=0, y=1.02, yanchor="bottom", traceorder="normal")


def _series_axis(names: list[str]) -> dict[str, Any]:
    return dict(type="category", categoryorder="array", categoryarray=names, autorange="reversed",
                automargin=True, tickfont=dict(size=FONT_PX))


def status_figure(run: RunData) -> Any:
    """Samples per status, one horizontal stacked bar per series."""
    import plotly.graph_objects as go

    flat = _flat_samples(run)
    series = list(flat)
    counts = {s: Counter(e.status or "?" for e in flat[s]) for s in series}
    fig = go.Figure()
    shown = [st for st in STATUS_ORDER[::-1] if any(counts[s].get(st) for s in series)]
    for status in shown:
        fig.add_bar(name=status, y=series, x=[counts[s].get(status, 0) for s in series], orientation="h",
                    marker_color=STATUS_COLORS.get(status),
                    hovertemplate="%{y}<br>" + status + ": %{x}<extra></extra>")
    top = max((len(flat[s]) for s in series), default=1)
    series_layout(fig, series, shown, WINDOW_PX / 2 - 50)
    fig.update_layout(barmode="stack", xaxis=count_axis(top, "samples"), yaxis=_series_axis(series),
                      legend=TOP_LEGEND)
    return fig


def rates_figure(run: RunData) -> Any:
    """Compile and correct rates over the samples, per series."""
    import plotly.graph_objects as go

    flat = _flat_samples(run)
    names = list(flat)
    fig = go.Figure()
    fig.add_bar(name="compile rate", y=names, orientation="h", marker_color="#1f77b4",
                x=[metrics.rate([compiled(e) for e in flat[m]]) for m in names],
                hovertemplate="%{y}<br>compile rate %{x:.0%}<extra></extra>")
    fig.add_bar(name="correct rate", y=names, orientation="h", marker_color="#2ca02c",
                x=[metrics.rate([is_correct(e) for e in flat[m]]) for m in names],
                hovertemplate="%{y}<br>correct rate %{x:.0%}<extra></extra>")
    legend = ["compile rate", "correct rate"]
    series_layout(fig, names, legend, WINDOW_PX / 2 - 50)
    fig.update_layout(barmode="group", yaxis=_series_axis(names), legend=TOP_LEGEND,
                      xaxis=dict(range=[0, 1.02], tickformat=".0%", automargin=True,
                                 title=dict(text="fraction of samples")))
    return fig


def failure_figure(run: RunData) -> Any:
    """Failing samples per taxonomy category (stacked), one horizontal bar per series; None
    when nothing failed."""
    import plotly.graph_objects as go

    flat = _flat_samples(run)
    names = list(flat)
    counts = {s: taxonomy.count(flat[s]) for s in names}
    shown = [c for c in taxonomy.CATEGORIES if any(counts[s].get(c) for s in names)]
    if not shown:
        return None
    fig = go.Figure()
    for category in shown:
        xs = [counts[s].get(category, 0) for s in names]
        share = [f"{x / len(flat[s]):.0%}" if flat[s] else "" for x, s in zip(xs, names, strict=True)]
        fig.add_bar(name=taxonomy.label(category), y=names, x=xs, orientation="h", customdata=share,
                    marker_color=CATEGORY_COLORS.get(category),
                    hovertemplate=f"%{{y}}<br>{esc(taxonomy.label(category))}: %{{x}} samples "
                                  f"(%{{customdata}})<br>{esc(taxonomy.meaning(category))}<extra></extra>")
    labels = [taxonomy.label(c) for c in shown]
    top = max((sum(counts[s].values()) for s in names), default=1)
    series_layout(fig, names, labels, WINDOW_PX - 100)
    fig.update_layout(barmode="stack", xaxis=count_axis(top, "failing samples"), yaxis=_series_axis(names),
                      legend=TOP_LEGEND)
    return fig


def task_status_figure(run: RunData, rows: TaskRows) -> tuple[Any, int]:
    """The best status of every task (rows) and series (columns), a colored square each; hover:
    the full task ID, status, failure category and message. Returns (figure, width)."""
    import plotly.graph_objects as go

    best = _series_best(run)
    series = sorted(best)
    by_status: dict[str, list[tuple[str, str, str]]] = {}
    for s in series:
        for task in rows.tasks:
            e = best[s].get(task)
            if e is None:
                continue
            category = taxonomy.classify(e)
            why = f"<br>{esc(taxonomy.label(category))}<br>{esc(cut(e.message or '', 160))}" \
                if category else ""
            by_status.setdefault(e.status or "?", []).append(
                (s, rows.labels[task], f"{esc(task)}<br>{esc(s)}<br>{esc(e.status)}{why}"))
    fig = go.Figure()
    statuses = [st for st in STATUS_ORDER[::-1] if st in by_status] + \
        [st for st in by_status if st not in STATUS_ORDER]
    for status in statuses:
        points = by_status[status]
        fig.add_scatter(name=status, x=[p[0] for p in points], y=[p[1] for p in points], mode="markers",
                        marker=dict(symbol="square", size=min(14, rows.row_px - 6),
                                    color=STATUS_COLORS.get(status, "#999")),
                        hovertext=[p[2] for p in points], hoverinfo="text")
    column = 44
    legend_width = text_px(statuses) + 44
    per_task_layout(fig, rows, x_title="", legend=True)
    fig.update_layout(margin=dict(r=legend_width + 8),
                      legend=dict(orientation="v", x=1.0, xanchor="left", y=1.0, yanchor="top",
                                  yref="paper"))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=series, tickangle=-45,
                     range=[-0.5, len(series) - 0.5], tickfont=dict(size=FONT_PX))
    return fig, fig.layout.margin.l + column * len(series) + legend_width + 8


def speedup_legend(best: dict[str, dict[str, EvaluationResult]]) -> list[str]:
    """The legend of the speedup chart: its series, and the marker of tasks without a speedup."""
    failed = any(not is_correct(e) or not e.speedup
                 for by_task in best.values() for e in by_task.values())
    return sorted(best) + (["no correct timed kernel"] if failed else [])


def speedup_figure(run: RunData, best: dict[str, dict[str, EvaluationResult]], rows: TaskRows) -> Any:
    """Best speedup per task (rows) and series on a log axis, bars from the 1x line; tasks
    without a correct, timed kernel are marked with an x at 1x and their status."""
    import plotly.graph_objects as go

    fig = go.Figure()
    failed_y, failed_text = [], []
    labels = rows.labels
    colors = series_colors(run)
    for series, by_task in sorted(best.items()):
        ys, xs, speeds, hover = [], [], [], []
        for task in rows.tasks:
            e = by_task.get(task)
            if e is None:
                continue
            s = e.speedup if is_correct(e) else None
            if s:
                ys.append(labels[task])
                xs.append(s - 1.0)
                speeds.append(s)
                hover.append(f"{task}<br>{series}<br>{s:.3g}x (t_ref {fmt(e.t_ref_ms)} ms, "
                             f"t_kernel {fmt(e.t_kernel_ms)} ms)")
            else:
                failed_y.append(labels[task])
                failed_text.append(f"{task}<br>{series}<br>{e.status}"
                                   + (" (not timed)" if is_correct(e) else ""))
        if ys:
            fig.add_bar(name=series, y=ys, x=xs, base=1.0, orientation="h", customdata=speeds,
                        marker_color=colors.get(series),
                        hovertext=hover, hoverinfo="text")
    if failed_y:
        fig.add_scatter(name="no correct timed kernel", y=failed_y, x=[1.0] * len(failed_y),
                        mode="markers", marker=dict(symbol="x", size=10, color="#d62728"),
                        hovertext=failed_text, hoverinfo="text")
    fig.add_vline(x=1.0, line_dash="dash", line_color="#444")
    per_task_layout(fig, rows, x_title="speedup over XLA (log; 1x = XLA)", legend=True)
    speeds = [e.speedup for by_task in best.values() for e in by_task.values()
              if is_correct(e) and e.speedup]
    fig.update_layout(barmode="group")
    fig.update_xaxes(**log_axis(min(speeds + [1.0]), max(speeds + [1.0])))
    return fig


def compile_times(run: RunData) -> dict[str, dict[str, list[float]]]:
    """series -> task -> the compile times of its evaluations."""
    per: dict[str, dict[str, list[float]]] = {}
    for e in run.evaluations:
        if isinstance(e.compile_s, (int, float)):
            per.setdefault(run.series_of(e), {}).setdefault(e.task, []).append(e.compile_s)
    return per


def compile_time_figure(run: RunData, rows: TaskRows) -> Any:
    """Mean compile time per task (rows) and series."""
    import plotly.graph_objects as go

    per = compile_times(run)
    if not per:
        return None
    tasks, labels = rows.tasks, rows.labels
    colors = series_colors(run)
    fig = go.Figure()
    for series, by_task in sorted(per.items()):
        ts = [t for t in tasks if t in by_task]
        fig.add_bar(name=series, orientation="h", y=[labels[t] for t in ts], marker_color=colors.get(series),
                    x=[sum(by_task[t]) / len(by_task[t]) for t in ts],
                    customdata=[[t, len(by_task[t])] for t in ts],
                    hovertemplate="%{customdata[0]}<br>" + esc(series) + "<br>%{x:.3g} s (mean of "
                                  "%{customdata[1]})<extra></extra>")
    per_task_layout(fig, rows, x_title="compile time (s, mean over its evaluations)", legend=True)
    fig.update_layout(barmode="group", bargap=0.25)
    return fig


def tolerances(run: RunData) -> dict[str, list[EvaluationResult]]:
    """series -> its correct evaluations that record their error against the tolerance
    (``tol_fraction``: the worst element's error over its atol + rtol*|truth|)."""
    per: dict[str, list[EvaluationResult]] = {}
    for e in run.evaluations:
        value = e.tol_fraction
        if is_correct(e) and isinstance(value, (int, float)) \
                and not isinstance(value, bool):
            per.setdefault(run.series_of(e), []).append(e)
    return per


def tolerance_figure(run: RunData, rows: TaskRows) -> Any:
    """How close each correct kernel is to failing: its error over the tolerance (1 = the
    tolerance, where it would fail), one marker per correct evaluation, per task (rows) and
    series; None when no correct evaluation records it."""
    import plotly.graph_objects as go

    per = tolerances(run)
    if not per:
        return None
    colors = series_colors(run)
    fig = go.Figure()
    top = 1.0
    for series, evals in sorted(per.items()):
        points = [(e, e.tol_fraction) for e in evals
                  if e.task in rows.labels and e.tol_fraction is not None]
        top = max([top] + [fraction for _, fraction in points])
        fig.add_scatter(name=series, mode="markers", y=[rows.labels[e.task] for e, _ in points],
                        x=[fraction for _, fraction in points],
                        marker=dict(color=colors.get(series), size=9, symbol="line-ns-open",
                                    line=dict(width=2, color=colors.get(series))),
                        hovertext=[f"{esc(e.task)}<br>{esc(series)}"
                                   + (f" {esc(e.extra['step'])}" if e.extra.get("step") else "")
                                   + f"<br>error {fraction:.3g}x the tolerance"
                                   + (f" (max abs err {e.max_abs_err:.3g})"
                                      if isinstance(e.max_abs_err, (int, float)) else "")
                                   for e, fraction in points],
                        hoverinfo="text")
    fig.add_vline(x=1.0, line_dash="dash", line_color="#d62728")
    per_task_layout(fig, rows, x_title="error / tolerance of each correct kernel (1 = fails)", legend=True)
    fig.update_xaxes(range=[0, top * 1.05], tickformat=".1f")
    return fig


def fast_p_figure(run: RunData) -> Any:
    """fast_p over p: the fraction of tasks whose best kernel is correct with speedup > p."""
    import plotly.graph_objects as go

    samples = run.samples()
    best = {m: {t: (metrics.best_speedup(_as_samples(seq)) is not None,
                    metrics.best_speedup(_as_samples(seq))) for t, seq in by_task.items()}
            for m, by_task in samples.items()}
    top = max((s for m in best.values() for _, s in m.values() if s), default=1.0)
    colors = series_colors(run)
    ps = sorted({0.0, 1.0, *[round(top * 1.1 * i / 200, 4) for i in range(201)],
                 *[s for m in best.values() for _, s in m.values() if s]})
    fig = go.Figure()
    for name, results in best.items():
        fig.add_scatter(name=name, x=ps, y=[metrics.fast_p(results, p) for p in ps],
                        line_color=colors.get(name),
                        mode="lines", line_shape="hv")
    fig.add_vline(x=1.0, line_dash="dash", line_color="#444", annotation_text="p = 1")
    fig.update_layout(xaxis=dict(title=dict(text="p (speedup threshold)"), automargin=True),
                      yaxis=dict(range=[0, 1.05], tickformat=".0%", title=dict(text="fast_p"),
                                 automargin=True))
    return fig


def _as_samples(seq: list[EvaluationResult]) -> list[metrics.Sample]:
    return [(is_correct(e), e.speedup) for e in seq]


def fast_p_at_n_figure(run: RunData) -> Any:
    """fast_1@N (timed) or correct@N (interpret) over N per series; fast_0@N dotted. N counts
    samples: integer ticks only."""
    import plotly.graph_objects as go

    samples = {m: {t: _as_samples(seq) for t, seq in by_task.items()}
               for m, by_task in run.samples().items()}
    timed = run.timed
    colors = series_colors(run)
    fig = go.Figure()
    longest_all = 1
    for name, by_task in samples.items():
        longest = max((len(s) for s in by_task.values()), default=0)
        longest_all = max(longest_all, longest)
        ns = list(range(1, longest + 1))
        if timed:
            fig.add_scatter(name=f"{name} fast_1@N", x=ns, mode="lines+markers", line_color=colors.get(name),
                            y=[metrics.fast_p_at_n(by_task, 1.0, n) for n in ns])
            fig.add_scatter(name=f"{name} fast_0@N", x=ns, mode="lines", line_dash="dot",
                            line_color=colors.get(name),
                            y=[metrics.fast_p_at_n(by_task, 0.0, n) for n in ns])
        else:
            fig.add_scatter(name=f"{name} correct@N", x=ns, mode="lines+markers", line_color=colors.get(name),
                            y=[sum(any(ok for ok, _ in seq[:n]) for seq in by_task.values())
                               / len(by_task) for n in ns])
    fig.update_layout(xaxis=n_axis(longest_all, "N (samples per task)"),
                      yaxis=dict(range=[0, 1.05], tickformat=".0%", automargin=True,
                                 title=dict(text="fast_p@N" if timed else "correct@N")))
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
        if not is_correct(e) or not e.t_kernel_ms:
            continue
        flops, nbytes = task_figures(e.task, e.size or "small")
        if not flops or not nbytes:
            continue
        ai = flops / nbytes
        kind = e.device_kind or "?"
        peaks = (e.peak_flops, e.peak_bytes_per_s)
        if not all(peaks):
            peaks = peak_for(kind) or (None, None)
        if all(peaks):
            roofs[kind] = peaks  # type: ignore[assignment]
        points.setdefault(run.series_of(e), []).append(
            (ai, flops / (e.t_kernel_ms / 1e3), f"{e.task} ({kind}): {e.speedup or 0:.3g}x"))
        if e.t_ref_ms:
            ref_points.append((ai, flops / (e.t_ref_ms / 1e3), f"{e.task}: XLA reference"))
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
                        marker=dict(size=9, color=series_colors(run).get(series)),
                        hovertext=[p[2] for p in pts], hoverinfo="text")
    if ref_points:
        fig.add_scatter(name="XLA reference", x=[p[0] for p in ref_points],
                        y=[p[1] for p in ref_points], mode="markers",
                        marker=dict(size=9, symbol="circle-open", color="#555"),
                        hovertext=[p[2] for p in ref_points], hoverinfo="text")
    fig.update_layout(xaxis=dict(type="log", title=dict(text="arithmetic intensity (FLOP/byte)"),
                                 automargin=True),
                      yaxis=dict(type="log", title=dict(text="achieved FLOP/s"), automargin=True))
    note = None if roofs else "no peak figures known for this device: points without roofs"
    return fig, note


# ---------------------------------------------------------------- header and tables

def secret_text(run: RunData) -> str:
    """The current segment's commitment and what the run_end events revealed: every segment
    (the run's start, each resume) commits to a fresh secret and reveals it when it ends."""
    from jaxbench.report.data import secret_audit

    commitment = run.manifest.get("secret_sha256") or "?"
    audit = secret_audit(run)
    total = len(audit.states)

    def which(numbers: list[int]) -> str:
        word = "segment" if len(numbers) == 1 else "segments"
        return f"{word} {', '.join(map(str, numbers))} of {total}"

    problems = []
    if audit.segments("mismatch"):  # other meaning: a segment's state
        mismatched = audit.segments("mismatch")  # other meaning: a segment's state
        problems.append(f"REVEALED SECRET DOES NOT MATCH ({which(mismatched)})")
    if audit.segments("unrevealed"):
        unrevealed = audit.segments("unrevealed")
        problems.append(f"{which(unrevealed)} never revealed (killed): "
                        f"{'its' if len(unrevealed) == 1 else 'their'} evaluations cannot be audited")
    if problems:
        state = "; ".join(problems)
    elif audit.verified is None:
        state = "run still open: secret not revealed yet"
        if total > 1:
            state += f" (the {total - 1} earlier segments revealed and verified)" if total > 2 \
                else " (the earlier segment revealed and verified)"
    elif total == 1:
        state = "revealed at run_end and matches"
    else:
        state = f"{total} segments, all revealed and verified"
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
    """A method's (or series') name, escaped, with the seeded flag when it starts from the seed
    kernels."""
    return esc(name) + (f" {seeded_flag()}" if seeded else "")


def progress_banner(summary: Summary) -> str:
    """The banner of a run that has not finished or misses evaluations ('' otherwise)."""
    progress = summary.get("progress") or {}
    if not progress.get("text"):
        return ""
    return (f"<p class=\"warn banner\" id=\"progress\">{esc(progress['text'])}. Figures and rates cover "
            "the evaluations written so far.</p>")


def header(run: RunData, summary: Summary) -> str:
    m = run.manifest
    versions = m.get("versions") or {}
    hardware = m.get("hardware") or {}
    devices = sorted({e.device_kind for e in run.evaluations
                      if e.mode == "device" and e.device_kind})
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
    if config.get("timing"):  # speedups timed otherwise than by default: not comparable as is
        facts.append(("timing", "--timing " + " ".join(
            f"{k}={v}" for k, v in sorted(config["timing"].items()))
            + " (not the default timing: compare speedups with runs timed alike)"))
    replayed = replay_of(m)
    if replayed:  # inputs drawn from a revealed secret: for comparisons, not hardened
        facts.append(("inputs", replay_text(replayed)))
    if config.get("model"):
        seeded = ", seeded: starts from the shipped seed kernels" if config.get("seeded") else ""
        facts.append(("model", f"{config.get('model')} (method {config.get('method')}{seeded}, "
                               f"budget {config.get('budget')})"))
    progress = summary.get("progress") or {}
    counts = Counter(e.status for e in run.evaluations)
    pills = " ".join(f"<span class=\"pill\" style=\"background:{STATUS_COLORS.get(s, '#999')}\">"
                     f"{esc(s)}: {counts[s]}</span>" for s in STATUS_ORDER[::-1] if counts.get(s))
    planned, done = progress.get("planned"), progress.get("evaluations", 0)
    if planned is not None and done < planned:
        word = "at most " if progress.get("upper_bound") else ""
        pills += (f" <span class=\"pill missing\" title=\"planned but not evaluated\">not evaluated: "
                  f"{word}{planned - done}</span>")
    evaluated = f"{len(run.evaluations)}"
    if planned is not None and progress.get("upper_bound"):
        evaluated += f" ({done} samples of up to {planned} planned)"
    elif planned is not None:
        evaluated += f" of {planned} planned"
    facts.append(("evaluations", evaluated))
    out = [progress_banner(summary), "<dl class=\"facts\">"]
    out += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts]
    out.append(f"<dt>statuses</dt><dd>{pills or '-'}</dd></dl>")
    if summary.get("note"):
        out.append(f"<p class=\"warn\">{esc(summary['note'])}</p>")
    out.append(metrics_table(summary))
    out.append(usage_table(summary))
    return "\n".join(o for o in out if o)


def metrics_table(summary: Summary) -> str:
    """The metrics of each series (method · target): rates, correct@N, fast_p@N, geomeans, cost."""
    from jaxbench.report.usage import cost_text

    rows_of = summary.get("series") or summary["methods"]
    if not rows_of:
        return "<p class=\"note\">No evaluations.</p>"
    first = next(iter(rows_of.values()))
    ns = list(first.get("correct_at", {}))
    cols = ["method · target", "tasks", "samples", "compile rate", "correct rate"]
    cols += [f"correct@{n}" for n in ns]
    if summary["timed"]:
        cols += [f"fast_0@{n}" for n in ns] + [f"fast_1@{n}" for n in ns]
        cols += ["geomean speedup", "geomean (correct only)"]
    with_llm = any(m.get("llm") for m in summary["methods"].values())
    if with_llm:
        cols += ["LLM calls", "cost"]
    rows = []
    for name, m in rows_of.items():
        cells = [method_label(name, bool(m.get("seeded"))), str(m["tasks"]), str(m["samples"]),
                 fmt(m["compile_rate"], ".0%"), fmt(m["correct_rate"], ".0%")]
        cells += [fmt(m["correct_at"].get(n), ".0%") for n in ns]
        if summary["timed"]:
            cells += [fmt(m["fast_0_at"].get(n), ".0%") for n in ns]
            cells += [fmt(m["fast_1_at"].get(n), ".0%") for n in ns]
            cells += [fmt(m.get("geomean_speedup"), ".3f", "x"),
                      fmt(m.get("geomean_speedup_unfloored"), ".3f", "x")]
        if with_llm:
            llm = m.get("llm")
            if llm is None and m.get("method") in summary["methods"]:  # calls shared by targets
                llm = summary["methods"][m["method"]].get("llm")
                cells += [f"{(llm or {}).get('calls', 0)} (all targets)", esc(cost_text(llm))]
            else:
                cells += [str((llm or {}).get("calls", 0)), esc(cost_text(llm))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    kinds = sorted({m.get("at_k") for m in rows_of.values() if m.get("at_k")})
    note = "".join(
        f"<p class=\"note\">@N for "
        f"{esc(', '.join(n for n, m in rows_of.items() if m.get('at_k') == k))}: {esc(k)}.</p>"
        for k in kinds)
    return (f"<h2>Metrics per method · target</h2><table id=\"metrics\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{note}")


def usage_table(summary: Summary) -> str:
    """LLM calls and evaluation time per method · target (``usage.py``): kernel and plan calls
    apart, latency, tokens, cached input share and cost, then the evaluations and their wall
    time; the evaluation columns alone for a run without LLM calls ('' without either)."""
    from jaxbench.report import usage

    spent = summary.get("usage") or {}
    if not spent:
        return ""
    cols = usage.columns(spent)
    seeded = {name for name, m in summary["methods"].items() if m.get("seeded")}
    body = []
    table = usage.rows(spent)
    units = usage.column_units(table)
    for row in table:
        tds = []
        for col, text in zip(cols, usage.cells(row, cols, units), strict=True):
            cls = " class=\"num\"" if col in usage.NUMERIC else \
                " class=\"nowrap\"" if col in ("method · target", "model", "calls") else ""
            content = method_label(text, row.method in seeded) if col == "method · target" and text \
                else esc(text)
            tds.append(f"<td{cls}>{content}</td>")
        body.append(("<tr class=\"first\">" if row.label else "<tr>") + "".join(tds) + "</tr>")
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    notes = [usage.EVAL_CAPTION]
    if usage.with_llm(spent):
        notes.insert(0, usage.CALLS_CAPTION)
    note = "".join(f"<p class=\"note\">{esc(n[:1].upper() + n[1:])}.</p>" for n in notes)
    return (f"<h2>{esc(usage.title(spent))}</h2><table id=\"usage\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{note}")


def failure_table(run: RunData, summary: Summary) -> str:
    """The failure taxonomy: one row per category that occurs, its meaning, its count per
    series (and share of the series' samples) and one message as an example."""
    failures = summary.get("failures") or {}
    series = [s for s, counts in failures.items() if counts]
    shown = [c for c in taxonomy.CATEGORIES if any(failures[s].get(c) for s in series)]
    if not shown:
        return "<p class=\"note\" id=\"failures\">No failing samples.</p>"
    samples = {s: (summary.get("series") or {}).get(s, {}).get("samples") for s in series}
    example: dict[str, str] = {}
    for seq in _flat_samples(run).values():
        for e in seq:
            category = taxonomy.classify(e)
            if category and category not in example and e.message:
                example[category] = e.message
    head = "".join(f"<th data-type=\"num\">{esc(s)}</th>" for s in series)
    rows = []
    for category in shown:
        color = CATEGORY_COLORS.get(category, "#999")
        swatch = f"<span class=\"swatch\" style=\"background:{color}\"></span>"
        cells = [f"<td title=\"{esc(category)}\">{swatch}{esc(taxonomy.label(category))}</td>",
                 f"<td class=\"meaning\">{esc(taxonomy.meaning(category))}</td>"]
        for s in series:
            n = failures[s].get(category, 0)
            share = f" ({n / samples[s]:.0%})" if n and samples.get(s) else ""
            cells.append(f"<td class=\"num\" data-v=\"{n}\">{n or ''}{share}</td>")
        text = example.get(category, "")
        cells.append(f"<td class=\"err\" title=\"{esc(text)}\">{esc(cut(text, 140))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table class=\"sortable\" id=\"failures\"><thead><tr><th data-type=\"str\">failure</th>"
            f"<th data-type=\"str\">meaning</th>{head}<th data-type=\"str\">example message</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def task_table(run: RunData, out_dir: Path, seeded: frozenset[str] = frozenset(),
               sample_page: str | None = None) -> str:
    """One row per task and series: its best evaluation, sortable by every column. Columns no
    row fills (timings in interpret mode, IR without --save-ir) are left out; long messages are
    cut, the full text on hover. The series of a method in ``seeded`` carry the seeded flag;
    with ``sample_page`` (the sample view's file), the best kernel links to its sample there."""
    cols = [("#", "num"), ("task", "num"), ("method · target", "str"), ("status", "str"),
            ("failure", "str"), ("stage", "str"), ("correct / samples", "num"), ("speedup", "num"),
            ("t_kernel ms", "num"), ("t_ref ms", "num"), ("max abs err", "num"), ("err / tol", "num"),
            ("compile s", "num"), ("error", "str"), ("kernel", "str"), ("sample", "str"), ("IR", "str")]
    always = {"#", "task", "method · target", "status"}
    rows = []
    for i, (task, series, best, group) in enumerate(run.best_rows()):
        status = best.status
        n_correct = sum(is_correct(e) for e in group)
        source, source_path = run.source(best)
        kernel = []
        if source_path is not None:  # a copy in sources/ is named by its digest: show the file's name
            name = Path(best.kernel_file or source_path).name
            kernel.append(link(source_path, out_dir, cut(name, 28)))
        if source is not None:
            kernel.append(f"<details><summary>source</summary><pre>{esc(source)}</pre></details>")
        ir = run.ir_files(best)
        ir_links = " ".join(link(p, out_dir, name) for name, p in ir.items())
        message = best.message or ""
        speed = best.speedup if status == Status.CORRECT else None
        flagged = bool(group) and method_of(group[0]) in seeded
        category = taxonomy.classify(best)
        step = best.extra.get("step")
        sample_link = ""
        if sample_page and step and best.extra.get("method"):
            href = sample_view.sample_href(task, series, step, sample_page)
            sample_link = f"<a class=\"sample-link\" href=\"{esc(href)}\">{esc(step)}</a>"
        rows.append([
            (str(i + 1), i, "num"),
            (esc(task), task_sort_value(task), ""),
            (method_label(series, flagged), series, ""),
            (f"<span class=\"pill\" style=\"background:{STATUS_COLORS.get(status, '#999')}\">"
             f"{esc(status)}</span>", status, ""),
            (f"<span title=\"{esc(taxonomy.meaning(category))}\">{esc(taxonomy.label(category))}</span>"
             if category else "", taxonomy.label(category) if category else None, ""),
            (esc(best.stage), None, ""),
            (f"{n_correct} / {len(group)}", n_correct / len(group) if group else 0, "num"),
            (fmt(speed, ".3g", "x"), speed, "num"),
            (fmt(best.t_kernel_ms, ".4g"), best.t_kernel_ms, "num"),
            (fmt(best.t_ref_ms, ".4g"), best.t_ref_ms, "num"),
            (fmt(best.max_abs_err, ".3g"), best.max_abs_err, "num"),
            (fmt(best.tol_fraction, ".2f"), best.tol_fraction, "num"),
            (fmt(best.compile_s, ".3g"), best.compile_s, "num"),
            (f"<span title=\"{esc(message)}\">{esc(cut(message, 180))}</span>" if message else "",
             message, "err"),
            (" ".join(kernel), None, ""),
            (sample_link, step if sample_link else None, ""),
            (ir_links, None, ""),
        ])
    keep = [j for j, (name, _) in enumerate(cols) if name in always or any(r[j][0] for r in rows)]
    body = []
    for row in rows:
        tds = []
        for j in keep:
            content, value, cls = row[j]
            attr = f" data-v=\"{esc(value)}\"" if value is not None else ""
            tds.append(f"<td class=\"{cls}\"{attr}>{content}</td>" if cls else f"<td{attr}>{content}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    head = "".join(f"<th data-type=\"{cols[j][1]}\">{esc(cols[j][0])}</th>" for j in keep)
    hidden = [cols[j][0] for j in range(len(cols)) if j not in keep]
    note = (f"<p class=\"note\">Columns no row has a value for are left out: {esc(', '.join(hidden))}.</p>"
            if hidden else "")
    return (f"<h2>Tasks (best kernel per method · target; click a column to sort)</h2>{note}"
            f"<table class=\"sortable\" id=\"tasks\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def skipped_note(run: RunData) -> str:
    """The kernel files `jaxbench run --kernels DIR` left out ('' when none was)."""
    if not run.skipped:
        return ""
    from jaxbench.report.summary import skipped_text

    return f"<p class=\"warn\" id=\"skipped\">{esc(skipped_text(run.skipped))}.</p>"


def judge_warnings_table(summary: Summary) -> str:
    """The evaluations the judge warned about (shared memory or VMEM it could not decide, a
    tool's crash set aside): '' when none."""
    from jaxbench.report.summary import JUDGE_WARNINGS

    warned = summary.get("judge_warnings") or {}
    if not warned.get("counts"):
        return ""
    kinds = "".join(f"<li><b>{esc(k)}</b> ({n}): {esc(JUDGE_WARNINGS.get(k, ''))}</li>"
                    for k, n in warned["counts"].items())
    rows = "".join(f"<tr><td>{esc(r['task'])}</td><td>{esc(r['target'])}</td>"
                   f"<td>{esc(r['status'])}</td><td>{esc(r['kind'])}</td>"
                   f"<td>{esc(cut(r['text'], 300))}</td></tr>" for r in warned.get("rows", []))
    return (f"<h2>Judge warnings</h2><div id=\"judge-warnings\"><ul>{kinds}</ul>"
            "<table><tr><th>task</th><th>target</th><th>status</th><th>warning</th>"
            f"<th>text</th></tr>{rows}</table></div>")


def build(run: RunData, out_dir: Path, samples: SampleIndex | None = None,
          plotly_src: str | None = None) -> str:
    """The report page of a run (links are relative to ``out_dir``). ``samples`` is the sample
    view's index (:func:`jaxbench.report.sample_view.write_samples`), ``plotly_src`` the
    plotly.js file beside the page (written there when not given)."""
    require_plotly()
    from jaxbench.report.summary import summarize

    summary = summarize(run.path)
    title = [f"<h1>jaxbench report: {esc(run.name)}</h1>", header(run, summary), skipped_note(run)]
    if not run.evaluations:  # nothing to draw: no empty axes, no library
        body = title + ["<p class=\"note\" id=\"no-evaluations\">No evaluations in this run directory "
                        "yet: no charts or tables to draw.</p>"]
        return page(f"jaxbench report: {run.name}", "\n".join(body))
    best = _series_best(run)
    timed = run.timed
    tasks = run.task_ids
    labels = task_labels(tasks)
    boxes = [chart_box("status-chart", "Statuses per method · target", status_figure(run)),
             chart_box("rates-chart", "Compile and correct rates per method · target", rates_figure(run))]
    if run.config.get("command") == "optimize":
        name = "fast_p@N over N per method · target" if timed else "correct@N over N per method · target"
        boxes.append(chart_box("fast-p-at-n-chart", name, fast_p_at_n_figure(run), height=340))
    if timed:
        boxes.append(chart_box("fast-p-chart", "fast_p over p (best kernel per task)", fast_p_figure(run),
                               height=340))
        roof, roof_note = roofline_figure(run)
        boxes.append(chart_box("roofline-chart", "Roofline (correct, timed kernels)", roof,
                               note=roof_note if roof is not None else "no task FLOP/byte figures"))
    else:
        boxes.append(chart_box(
            "timing-charts", "Speedups, fast_p and roofline", None,
            note="not drawn: this run has no timings (interpret mode checks correctness only; "
                 "speedups need a device)"))
    failed = any(summary.get("failures", {}).values())
    failures = chart_box("failures-chart", "Failing samples by category, per method · target",
                         failure_figure(run), wide=True, note=None if failed else "no failing samples")
    series = sorted(best)
    row_px = ROW_PX + BAR_PX * max(len(series) - 1, 0)
    grid_probe = TaskRows(tasks, labels, row_px, grid_top(series))
    _, grid_width = task_status_figure(run, grid_probe)
    main_width = WINDOW_PX - 2 * 24 - grid_width - 2 * 9 * 2 - 16  # what the status grid leaves
    legend = speedup_legend(best) if timed else sorted(tolerances(run))
    rows = TaskRows(tasks, labels, row_px, max(grid_top(series), legend_top(legend, main_width - 40)))
    grid, grid_width = task_status_figure(run, rows)
    per_task = [chart_box("task-status-chart", "Best status per task", grid, width=grid_width,
                          tasks=len(tasks))]
    if timed:
        per_task.append(chart_box("speedup-chart", "Best speedup per task (log scale, bars from 1x)",
                                  speedup_figure(run, best, rows), tasks=len(tasks)))
    else:
        tolerance = tolerance_figure(run, rows)
        per_task.append(chart_box(
            "tolerance-chart", "Error / tolerance of the correct kernels (how close each is to failing)",
            tolerance, tasks=len(tasks),
            note=None if tolerance is not None else "no correct kernel records its error against the "
                                                    "tolerance"))
    compile_rows = TaskRows(tasks, labels, row_px, legend_top(sorted(compile_times(run)), WINDOW_PX - 100))
    compile_fig = compile_time_figure(run, compile_rows)
    compile_box = chart_box("compile-chart", "Compile time per task (mean over its evaluations)",
                            compile_fig, tasks=len(tasks), wide=True,
                            note=None if compile_fig is not None else "no evaluation reached compilation")
    body = title + [
        "<h2>Charts</h2>", f"<div class=\"charts\">{''.join(boxes)}</div>",
        "<h2>Failures by category (taxonomy of the failing samples)</h2>",
        f"<div class=\"charts\">{failures}</div>", failure_table(run, summary),
        judge_warnings_table(summary),
        f"<h2>Per task ({len(tasks)} tasks, catalogue order; hover for the full name)</h2>",
        f"<div class=\"per-task\">{''.join(per_task)}</div>",
        f"<div class=\"charts\" style=\"margin-top:16px\">{compile_box}</div>",
        task_table(run, out_dir, frozenset(n for n, m in summary["methods"].items() if m.get("seeded")),
                   sample_page=samples["page"] if samples else None),
        sample_view.section(samples)]
    return page(f"jaxbench report: {run.name}", "\n".join(body),
                plotly_src=plotly_src or plotly_script(out_dir))


def write_report(run_dir: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Writes the HTML report of ``run_dir`` to ``out`` and returns its path; beside it,
    plotly.js (``plotly-<version>.min.js``, shared by the pages of the folder) and, for an
    agent run, the per-task sample files of the sample view (``NAME.samples/``)."""
    run = load_run(run_dir)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    samples = sample_view.write_samples(run, out)
    text = build(run, out.parent, samples)
    if samples is not None:  # the sample view: a page of its own, without the library
        body = sample_view.page_body(run, out, samples, STATUS_COLORS)
        view = sample_view.sample_page(out)
        view_tmp = view.with_name(view.name + ".tmp")
        view_tmp.write_text(page(f"jaxbench samples: {run.name}", body))
        view_tmp.replace(view)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    return out


__all__ = ["build", "chart_box", "failure_table", "page", "plotly_script", "require_plotly", "task_labels",
           "task_table", "usage_table", "write_report"]
