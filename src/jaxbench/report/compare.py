"""``jaxbench compare RUN_A RUN_B``: per-task status and speedup changes from A to B.

Each run is reduced to its best evaluation per (task, method, target). Rows are matched on
that key; when each run has exactly one method and they differ (best_of_n in A, evolve in
B), rows are matched on (task, target) alone. A row is a **regression** when B lost a
correct kernel or its speedup fell by more than the threshold (default 5 %), an
**improvement** the other way round; regressions come first, then rows missing from B,
other status changes, improvements, rows new in B and unchanged rows, each group in the
registry's catalogue order.

With ``common`` (the default when one run's rows are a subset of the other's: a one-task run
against a suite run), only the rows both runs have are listed; the rows only one run has are
counted in ``folded`` and named in one line, not listed one by one.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, TypedDict

from jaxbench.contract import EvaluationResult
from jaxbench.report.data import (
    RunData,
    best_of,
    inputs_commitment,
    is_correct,
    load_run,
    method_of,
    replay_of,
    task_order_key,
    task_sort_value,
)

CHANGES = ("regression", "missing", "status", "improvement", "new", "same")
DEFAULT_THRESHOLD = 0.05


class RunFacts(TypedDict):
    """What the comparison says of each run (``"a"``, ``"b"``; :func:`_facts`)."""

    run: str
    command: Any  # the manifest config's "command", as recorded
    modes: list[str]
    targets: list[str]
    methods: list[str]
    evaluations: int
    statuses: dict[str, int]
    git_sha: Any  # the manifest's, as recorded (None where it has none)
    device_kinds: list[str]
    timing: dict[str, Any]  # the run's --timing options (empty: the defaults)
    inputs_sha256: str | None  # the one secret its inputs drew from (inputs_commitment)
    replay_of: dict[str, Any] | None  # a replay run's: whose revealed secret it used


class Row(TypedDict):
    """A row of the comparison: a (task, target, method) key, its change (one of
    :data:`CHANGES`), each run's best status, speedup (of a correct kernel; None without) and
    message, and the speedup ratio B / A where both have one."""

    task: str
    target: str
    method: str
    change: str
    status_a: str | None
    status_b: str | None
    speedup_a: float | None
    speedup_b: float | None
    ratio: float | None
    message_a: str | None
    message_b: str | None


class Comparison(TypedDict):
    """:func:`compare`'s result (``jaxbench compare --json``): both runs' facts, whether they
    drew the same inputs (``same_inputs``: one secret behind every input of each, the same in
    both), the threshold, whether rows were matched on the method, the count of each change
    (all rows, listed or folded), whether only the common rows are listed, the tasks of the
    rows folded away (``missing``, ``new``), the geomean of the listed ratios and the listed
    rows."""

    a: RunFacts
    b: RunFacts
    same_inputs: bool
    threshold: float
    matched_on_method: bool
    counts: dict[str, int]
    common: bool
    folded: dict[str, list[str]]
    geomean_ratio: float | None
    rows: list[Row]


def _best_by_key(run: RunData, by_method: bool) -> dict[tuple[str, str, str], EvaluationResult]:
    groups: dict[tuple[str, str, str], list[EvaluationResult]] = {}
    for e in run.evaluations:
        key = (e.task, e.target or "", method_of(e) if by_method else "*")
        groups.setdefault(key, []).append(e)
    return {k: best for k, v in groups.items() if (best := best_of(v)) is not None}


def _speedup(e: EvaluationResult | None) -> float | None:
    if e is None or not is_correct(e):
        return None
    s = e.speedup
    return float(s) if isinstance(s, (int, float)) and s > 0 else None


def classify(a: EvaluationResult | None, b: EvaluationResult | None, threshold: float) -> str:
    """How a row changed from A's best evaluation ``a`` to B's ``b`` (None where the run has
    none): one of :data:`CHANGES`."""
    if a is None:
        return "new"
    if b is None:
        return "missing"
    ok_a, ok_b = is_correct(a), is_correct(b)
    if ok_a and not ok_b:
        return "regression"
    if ok_b and not ok_a:
        return "improvement"
    sa, sb = _speedup(a), _speedup(b)
    if sa is not None and sb is not None:
        if sb < sa * (1 - threshold):
            return "regression"
        if sb > sa * (1 + threshold):
            return "improvement"
    if a.status != b.status:
        return "status"
    return "same"


def compare(run_a: str | os.PathLike[str] | RunData, run_b: str | os.PathLike[str] | RunData,
            threshold: float = DEFAULT_THRESHOLD, common: bool | None = None) -> Comparison:
    """The comparison as one JSON-ready dict: both runs' facts, rows in report order, counts.
    ``common``: list only the rows both runs have (``None``: when one run's rows are a strict
    subset of the other's)."""
    a = run_a if isinstance(run_a, RunData) else load_run(run_a)
    b = run_b if isinstance(run_b, RunData) else load_run(run_b)
    methods_a = {method_of(e) for e in a.evaluations}
    methods_b = {method_of(e) for e in b.evaluations}
    by_method = not (len(methods_a) == 1 and len(methods_b) == 1 and methods_a != methods_b)
    best_a, best_b = _best_by_key(a, by_method), _best_by_key(b, by_method)
    if common is None:
        common = set(best_a) != set(best_b) and (set(best_a) <= set(best_b) or set(best_b) <= set(best_a))
    rows: list[Row] = []
    for key in set(best_a) | set(best_b):
        task, target, method = key
        ea, eb = best_a.get(key), best_b.get(key)
        sa, sb = _speedup(ea), _speedup(eb)
        change = classify(ea, eb, threshold)
        rows.append({
            "task": task, "target": target,
            "method": method if by_method else f"{next(iter(methods_a))} -> {next(iter(methods_b))}",
            "change": change,
            "status_a": ea.status if ea else None, "status_b": eb.status if eb else None,
            "speedup_a": sa, "speedup_b": sb,
            "ratio": sb / sa if sa and sb else None,
            "message_a": (ea.message or None) if ea else None,
            "message_b": (eb.message or None) if eb else None,
        })
    rows.sort(key=lambda r: (CHANGES.index(r["change"]), task_order_key(r["task"]), r["target"],
                             r["method"]))
    counts = {c: sum(r["change"] == c for r in rows) for c in CHANGES}
    folded: dict[str, list[str]] = {"missing": [], "new": []}
    if common:
        for r in rows:
            if r["change"] in folded:
                folded[r["change"]].append(r["task"])
        rows = [r for r in rows if r["change"] not in folded]
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    facts_a, facts_b = _facts(a), _facts(b)
    return {
        "a": facts_a, "b": facts_b,
        "same_inputs": facts_a["inputs_sha256"] is not None
        and facts_a["inputs_sha256"] == facts_b["inputs_sha256"],
        "threshold": threshold, "matched_on_method": by_method,
        "counts": counts, "common": common,
        "folded": {change: sorted(set(tasks), key=task_order_key) for change, tasks in folded.items()},
        "geomean_ratio": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
        "rows": rows,
    }


def _facts(run: RunData) -> RunFacts:
    statuses: dict[str, int] = {}
    for e in run.evaluations:
        statuses[e.status or "?"] = statuses.get(e.status or "?", 0) + 1
    return {"run": str(run.path), "command": run.config.get("command"), "modes": run.modes,
            "targets": run.targets, "methods": sorted({method_of(e) for e in run.evaluations}),
            "evaluations": len(run.evaluations), "statuses": statuses,
            "git_sha": run.manifest.get("git_sha"),
            "device_kinds": sorted({e.device_kind for e in run.evaluations
                                    if e.mode == "device" and e.device_kind}),
            "timing": dict(run.config.get("timing") or {}),
            "inputs_sha256": inputs_commitment(run), "replay_of": replay_of(run.manifest)}


def timing_text(result: Comparison) -> str | None:
    """A warning when the two runs were timed with other ``--timing`` options (their speedups
    then differ by method too), e.g. "timed differently: A with device_reps=20, B with the
    defaults"; None when they were timed alike."""
    a, b = result["a"].get("timing") or {}, result["b"].get("timing") or {}
    if a == b:
        return None

    def said(options: dict[str, Any]) -> str:
        return "with " + (" ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"
                                   for k, v in sorted(options.items())) or "the defaults")

    return (f"timed differently: A {said(a)}, B {said(b)} (--timing); a speedup's change may "
            "come from the timing method as well as from the kernel")


def inputs_text(result: Comparison) -> str | None:
    """Whether the two runs drew the same inputs, e.g. "same inputs: B replays A (secret sha256
    ...)"; when they did not and some speedup is compared, a warning: the timings of a kernel
    whose time depends on its data (ragged lengths drawn at random) differ between them by the
    inputs alone. None for different inputs and no speedup compared (nothing to warn of)."""
    a, b = result["a"], result["b"]
    if not result.get("same_inputs"):
        if not any(row.get("ratio") for row in result["rows"]):
            return None
        source = a["run"] if a.get("inputs_sha256") else "RUN (a run ended in one segment)"
        return (f"different inputs: A and B drew their inputs from different secrets, so the "
                f"timings of data-dependent kernels differ between them by the inputs too; use "
                f"`jaxbench run --replay {source}` to compare on the same inputs")
    replayed_a, replayed_b = a.get("replay_of") or {}, b.get("replay_of") or {}
    if replayed_a and replayed_b:
        how = f"both replay {replayed_a.get('run')}"
    elif replayed_b or replayed_a:
        how = "B replays A" if replayed_b else "A replays B"
    else:
        how = "A and B drew from the same secret"
    return f"same inputs: {how} (secret sha256 {str(a['inputs_sha256'])[:16]}…)"


# How counts read: "1 regression", "2 regressions", "1 status change", "3 unchanged".
_PLURALS = {"regression": "regressions", "missing": "missing", "status": "status changes",
            "improvement": "improvements", "new": "new", "same": "unchanged"}
_SINGULARS = {"status": "status change", "same": "unchanged"}


def folded_text(result: Comparison, shown: int = 5) -> str | None:
    """One line for the rows ``common`` left out, e.g. "99 rows only in A (tasks 1p_..., 2p_...,
    and 94 more) and 0 only in B are not listed (--all lists them)"; ``None`` when none were."""
    folded = result.get("folded") or {}
    counts = result["counts"]
    if not result.get("common") or not (counts["missing"] or counts["new"]):
        return None

    def side(change: str, label: str) -> str:
        n, tasks = counts[change], folded.get(change, [])
        names = ", ".join(tasks[:shown]) + (f" and {len(tasks) - shown} more" if len(tasks) > shown else "")
        return f"{n} row{'s' * (n != 1)} only in {label}" + (f" (tasks {names})" if n else "")

    return f"{side('missing', 'A')} and {side('new', 'B')} are not listed (--all lists them)"


def count_text(counts: dict[str, int]) -> str:
    """``{"regression": 2, "same": 1}`` -> "2 regressions, 1 unchanged" (zero counts left out)."""
    return ", ".join(f"{n} {_SINGULARS.get(c, c) if n == 1 else _PLURALS[c]}"
                     for c, n in counts.items() if n)


_COLORS = {"regression": "red", "missing": "red", "status": "yellow", "improvement": "green",
           "new": "cyan", "same": "dim"}


def _x(value: float | None) -> str:
    return f"{value:.3g}x" if value is not None else "-"


def print_comparison(result: Comparison, console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{result['a']['run']} (A) -> {result['b']['run']} (B)")
    for col in ("change", "task", "target", "method", "status A -> B", "speedup A", "speedup B",
                "B / A", "error B"):
        table.add_column(col, overflow="fold")
    for r in result["rows"]:
        color = _COLORS[r["change"]]
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        table.add_row(f"[{color}]{r['change']}[/]", r["task"], r["target"], r["method"],
                      f"{r['status_a'] or '-'} -> {r['status_b'] or '-'}", _x(r["speedup_a"]),
                      _x(r["speedup_b"]), ratio, (r["message_b"] or "")[:60])
    console.print(table)
    folded = folded_text(result)
    if folded:
        console.print(folded, markup=False)
    timing = timing_text(result)
    if timing:
        console.print(f"[yellow]{escape(timing)}[/]")
    inputs = inputs_text(result)
    if inputs:
        console.print(escape(inputs) if result.get("same_inputs") else f"[yellow]{escape(inputs)}[/]")
    counts = count_text(result["counts"])
    geo = result["geomean_ratio"]
    console.print(f"{counts or 'nothing to compare'}"
                  + (f"; geomean speedup B/A over timed pairs {geo:.3f}" if geo else "")
                  + f" (threshold {result['threshold']:.0%})")


def comparison_html(result: Comparison, out_dir: Path) -> str:
    """A page that opens offline (plotly.js beside it, :func:`~jaxbench.report.html.plotly_script`):
    both runs' facts, the B/A speedup chart (when both runs were
    timed) and the sortable table of changes."""
    from jaxbench.report.html import chart_box, esc, page, plotly_script, require_plotly

    require_plotly()
    import plotly.graph_objects as go

    colors = {"regression": "#d62728", "improvement": "#2ca02c", "same": "#7f7f7f"}
    facts = []
    for label, f in (("a", result["a"]), ("b", result["b"])):
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(f["statuses"].items()))
        facts.append(f"<dt>run {label.upper()}</dt><dd>{esc(f['run'])} ({esc(f['command'])}; "
                     f"{esc(', '.join(f['methods']))}; {esc(', '.join(f['modes']))}; "
                     f"{esc(', '.join(f['device_kinds']) or 'no device')}; git {esc(f['git_sha'])}; "
                     f"{esc(statuses)})</dd>")
    counts = count_text(result["counts"])
    facts.append(f"<dt>changes</dt><dd>{esc(counts)} (threshold {result['threshold']:.0%})</dd>")
    if folded_text(result):
        facts.append(f"<dt>not listed</dt><dd>{esc(folded_text(result))}</dd>")
    if timing_text(result):
        facts.append(f"<dt>timing</dt><dd>{esc(timing_text(result))}</dd>")
    if inputs_text(result):
        facts.append(f"<dt>inputs</dt><dd>{esc(inputs_text(result))}</dd>")
    timed = [r for r in result["rows"] if r["ratio"]]
    if timed:
        fig = go.Figure()
        labels = [f"{r['task']} [{r['target']}] {r['method']}" for r in timed]
        fig.add_bar(x=labels, y=[r["ratio"] - 1 for r in timed], base=1.0,
                    marker_color=[colors.get(r["change"], "#1f77b4") for r in timed],
                    hovertext=[f"{lab}: {r['ratio']:.3f}" for lab, r in zip(labels, timed, strict=True)],
                    hoverinfo="text", name="B / A")
        fig.add_hline(y=1.0, line_dash="dash", line_color="#444")
        fig.update_layout(yaxis=dict(type="log", title="speedup B / speedup A (log)"), showlegend=False)
        chart = chart_box("ratio-chart", "Speedup of B relative to A", fig, wide=True, height=420)
    else:
        chart = chart_box("ratio-chart", "Speedup of B relative to A", None, wide=True,
                          note="no task was correct and timed in both runs")
    cols = [("change", "str"), ("task", "num"), ("target", "str"), ("method", "str"),
            ("status A", "str"), ("status B", "str"), ("speedup A", "num"), ("speedup B", "num"),
            ("B / A", "num"), ("error A", "str"), ("error B", "str")]
    body = []
    for r in result["rows"]:
        cells = [(r["change"], CHANGES.index(r["change"])), (r["task"], task_sort_value(r["task"])),
                 (r["target"], None), (r["method"], None), (r["status_a"] or "-", None),
                 (r["status_b"] or "-", None), (_x(r["speedup_a"]), r["speedup_a"]),
                 (_x(r["speedup_b"]), r["speedup_b"]),
                 (f"{r['ratio']:.3f}" if r["ratio"] else "", r["ratio"]),
                 ((r["message_a"] or "")[:160], None), ((r["message_b"] or "")[:160], None)]
        tds = "".join(_td(esc(c), v) for c, v in cells)
        style = f" style=\"color:{colors[r['change']]}\"" if r["change"] in ("regression",) else ""
        body.append(f"<tr{style}>{tds}</tr>")
    head = "".join(f"<th data-type=\"{t}\">{esc(c)}</th>" for c, t in cols)
    html_body = (f"<h1>jaxbench compare</h1><dl class=\"facts\">{''.join(facts)}</dl>"
                 f"<div class=\"charts\">{chart}</div>"
                 f"<h2>Changes (regressions first; click a column to sort)</h2>"
                 f"<table class=\"sortable\" id=\"tasks\"><thead><tr>{head}</tr></thead>"
                 f"<tbody>{''.join(body)}</tbody></table>")
    return page("jaxbench compare", html_body, plotly_src=plotly_script(out_dir))


def _td(content: str, value: Any) -> str:
    from jaxbench.report.html import esc

    return f"<td data-v=\"{esc(value)}\">{content}</td>" if value is not None else f"<td>{content}</td>"


def write_comparison_html(result: Comparison, out: str | os.PathLike[str]) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(comparison_html(result, out.parent))
    tmp.replace(out)
    return out


__all__ = ["CHANGES", "classify", "compare", "folded_text", "inputs_text", "print_comparison",
           "write_comparison_html"]
