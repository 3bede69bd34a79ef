"""What a run spent: its LLM calls (latency, tokens, cost) and its evaluation time, per
method · target; the table "LLM calls and evaluation time" of the terminal and HTML reports,
and ``"usage"`` in ``jaxbench report --json``.

From the run's events alone:

- ``llm_call`` events, apart by ``kind``: ``plan`` (Autocomp's planning calls) and ``kernel``
  (calls whose answer is a candidate; an event with another or no kind counts as one), and
  over all of them. Per group: calls, failed calls (an ``error``: no answer, no tokens, no
  latency, nothing to price), calls answered from the local answer cache (``cached``: the
  run's own answer, stored when it was paid for, whose event an interrupted session never
  wrote; counted like every answered call, with the latency and cost recorded for it),
  latency p50 / p90 / total over the calls that record a ``latency_s`` (scripted and replayed
  answers do not), input and output tokens, the cached input share (provider-reported
  prompt-cache hits, ``cached_input_tokens``, over the input tokens of the calls that report
  them; None when none does) and the cost (priced calls summed, the answered calls without a
  price counted apart as unpriced, never as $0).
- ``evaluation`` events: those the evaluator ran (seed kernels included), those that reused
  the verdict of an identical kernel (``reused_from``: no evaluation time spent) and answers
  without a kernel (``synthetic``: recorded as a compile error, never run); evaluation time
  (``wall_s``) total and p50 over the evaluations that ran.

Percentiles interpolate linearly between the closest ranks (:func:`percentile`). LLM calls
name their method but no target: they join the method's series when it has one (an optimize
run has one target), else they get a row of their own named by the method.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from jaxbench.contract import FIELD_NO_KERNEL, EvaluationResult
from jaxbench.report.data import method_of, series_label

KINDS = ("kernel", "plan")


class Priced(TypedDict):
    """What :func:`cost_text` reads of a group of LLM calls: ``calls`` (failed ones included),
    ``failed_calls``, ``calls_without_cost`` (answered, no price) and the summed ``cost``."""

    calls: int
    failed_calls: int
    calls_without_cost: int
    cost: float


class CallStats(Priced):
    """The figures of a group of ``llm_call`` events (:func:`call_stats`; the module's
    docstring says what each counts). Durations in seconds; None where no call records one."""

    cached_calls: int
    latency_calls: int
    latency_p50_s: float | None
    latency_p90_s: float | None
    latency_total_s: float | None
    token_calls: int
    input_tokens: float
    output_tokens: float
    cached_input_calls: int
    cached_input_tokens: float | None
    cached_input_share: float | None


class CallsByKind(TypedDict):
    """:func:`call_stats` of a series' kernel calls, its plan calls and all its calls."""

    kernel: CallStats
    plan: CallStats
    all: CallStats


class EvaluationStats(TypedDict):
    """The evaluations of a series (:func:`evaluation_stats`). ``no_kernel`` is spelt
    :data:`~jaxbench.contract.FIELD_NO_KERNEL` where it is read or written."""

    evaluations: int
    run: int
    reused: int
    no_kernel: int
    timed: int
    time_total_s: float | None
    time_p50_s: float | None


class SeriesUsage(TypedDict):
    """What a series (or a method's calls without a single series) spent: ``"usage"``'s values
    in the summary (:func:`summarize_usage`)."""

    method: str
    target: str | None
    models: list[str]
    llm: CallsByKind | None
    evaluations: EvaluationStats | None
    by_model: NotRequired[dict[str, CallsByKind]]


Usage = dict[str, SeriesUsage]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0 <= q <= 1) of ``values``, interpolated linearly between the closest
    ranks (numpy's default, Hyndman & Fan's type 7): with ``x`` sorted and ``h = (n - 1) q``,
    ``x[floor(h)] + (h - floor(h)) (x[floor(h) + 1] - x[floor(h)])``. None without values."""
    if not values:
        return None
    x = sorted(values)
    h = (len(x) - 1) * q
    lo = math.floor(h)
    if lo + 1 >= len(x):
        return float(x[-1])
    return x[lo] + (h - lo) * (x[lo + 1] - x[lo])


def call_kind(event: dict[str, Any]) -> str:
    """``plan`` for a planning call, ``kernel`` for any other (its answer is a candidate)."""
    return "plan" if event.get("kind") == "plan" else "kernel"


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else None


def call_stats(calls: Iterable[dict[str, Any]]) -> CallStats:
    """The figures of a group of ``llm_call`` events (see the module's docstring)."""
    calls = list(calls)
    answered = [c for c in calls if not c.get("error")]
    latencies = [x for x in (_number(c.get("latency_s")) for c in answered) if x is not None]
    tokens = [c for c in answered if _number(c.get("input_tokens")) is not None]
    reporting = [c for c in answered if _number(c.get("cached_input_tokens")) is not None]
    reported_input = sum(_number(c.get("input_tokens")) or 0 for c in reporting)
    cached_input = sum(c["cached_input_tokens"] for c in reporting)
    priced = [c["cost"] for c in answered if _number(c.get("cost")) is not None]
    return {
        "calls": len(calls),
        "failed_calls": len(calls) - len(answered),
        "cached_calls": sum(bool(c.get("cached")) for c in answered),
        "latency_calls": len(latencies),
        "latency_p50_s": percentile(latencies, 0.5),
        "latency_p90_s": percentile(latencies, 0.9),
        "latency_total_s": sum(latencies) if latencies else None,
        "token_calls": len(tokens),
        "input_tokens": sum(_number(c.get("input_tokens")) or 0 for c in answered),
        "output_tokens": sum(_number(c.get("output_tokens")) or 0 for c in answered),
        "cached_input_calls": len(reporting),
        "cached_input_tokens": cached_input if reporting else None,
        "cached_input_share": cached_input / reported_input if reporting and reported_input else None,
        "cost": sum(priced, 0.0),
        "calls_without_cost": len(answered) - len(priced),
    }


def by_kind(calls: Iterable[dict[str, Any]]) -> CallsByKind:
    """``kernel``, ``plan`` and ``all``: :func:`call_stats` of each kind and of every call."""
    calls = list(calls)
    return CallsByKind(kernel=call_stats(c for c in calls if call_kind(c) == "kernel"),
                       plan=call_stats(c for c in calls if call_kind(c) == "plan"),
                       all=call_stats(calls))


def evaluation_stats(evaluations: Iterable[EvaluationResult]) -> EvaluationStats:
    """The evaluations of a series: ``evaluations`` (every event), ``run`` (the evaluator ran;
    seed kernels included), ``reused`` (a verdict reused for an identical kernel, its
    ``reused_from`` key: no time spent), ``no_kernel`` (an answer without a kernel, recorded
    and never run: ``synthetic``), ``timed`` (run, with a ``wall_s``) and their wall time,
    total and p50."""
    evaluations = list(evaluations)
    reused = [e for e in evaluations if e.extra.get("reused_from") is not None]
    no_kernel = [e for e in evaluations if e.extra.get("reused_from") is None and e.synthetic]
    ran = [e for e in evaluations if e.extra.get("reused_from") is None and not e.synthetic]
    times = [x for x in (_number(e.wall_s) for e in ran) if x is not None]
    return {"evaluations": len(evaluations), "run": len(ran), "reused": len(reused),
            FIELD_NO_KERNEL: len(no_kernel), "timed": len(times),
            "time_total_s": sum(times) if times else None, "time_p50_s": percentile(times, 0.5)}


def summarize_usage(llm_calls: Iterable[dict[str, Any]],
                    evaluations: Iterable[EvaluationResult]) -> Usage:
    """Series (method · target; a method's name for LLM calls whose method has no single
    series) -> ``method``, ``target``, ``models`` (of its calls), ``llm`` (:func:`by_kind`; None
    without calls), ``by_model`` (model -> :func:`by_kind`, only when its calls used several
    models) and ``evaluations`` (:func:`evaluation_stats`; None without evaluations)."""
    evals: dict[str, list[EvaluationResult]] = defaultdict(list)
    series_of_method: dict[str, set[str]] = defaultdict(set)
    targets: dict[str, str | None] = {}
    for e in evaluations:
        label = series_label(e)
        evals[label].append(e)
        series_of_method[method_of(e)].add(label)
        targets[label] = e.target or None
    calls: dict[str, list[dict[str, Any]]] = defaultdict(list)
    call_method: dict[str, str] = {}
    for c in llm_calls:
        method = c.get("method") or "?"
        series = series_of_method.get(method, set())
        label = next(iter(series)) if len(series) == 1 else method
        calls[label].append(c)
        call_method[label] = method
    out: Usage = {}
    for label in sorted(set(evals) | set(calls)):
        group = calls.get(label, [])
        models = sorted({str(c.get("model")) for c in group if c.get("model")})
        method = call_method.get(label) or method_of(evals[label][0])
        entry: SeriesUsage = {"method": method, "target": targets.get(label), "models": models,
                                 "llm": by_kind(group) if group else None,
                                 "evaluations": evaluation_stats(evals[label]) if label in evals else None}
        if len(models) > 1:
            entry["by_model"] = {m: by_kind(c for c in group if c.get("model") == m) for m in models}
        out[label] = entry
    return out


# -- text ---------------------------------------------------------------------------------------

TIME_UNITS = (("s", 1.0, 600.0), ("min", 60.0, 36000.0), ("h", 3600.0, float("inf")))


def time_unit(values: Iterable[float | None]) -> str:
    """The one unit a column of durations is written in: the unit of its longest ("s" under
    10 minutes, "min" under 10 hours, "h" beyond)."""
    longest = max((v for v in values if v is not None), default=0.0)
    return next(name for name, _, below in TIME_UNITS if longest < below)


def seconds_text(seconds: float | None, unit: str | None = None) -> str:
    """A duration in ``unit`` ("s", "min" or "h"; by default the unit :func:`time_unit` gives
    it alone): "0.42 s", "12.3 s", "0.20 min", "14.2 min", "2.5 h"; "n/a" for None."""
    if seconds is None:
        return "n/a"
    unit = unit or time_unit([seconds])
    value = seconds / next(scale for name, scale, _ in TIME_UNITS if name == unit)
    return f"{value:.2f} {unit}" if value < 10 else f"{value:.1f} {unit}"


def tokens_text(stats: CallStats, key: str) -> str:
    """A token count with thousands separators; "n/a" when no answered call reports tokens."""
    if not stats.get("token_calls"):
        return "n/a"
    return f"{int(stats[key]):,}"


def share_text(stats: CallStats) -> str:
    """The cached input share, "20.0%"; "(2 of 4 calls)" after it when only some answered calls
    report prompt-cache hits; "n/a" when none does."""
    share = stats.get("cached_input_share")
    if share is None:
        return "n/a"
    answered = stats["calls"] - stats["failed_calls"]
    reporting = stats["cached_input_calls"]
    return f"{share:.1%}" + (f" ({reporting} of {answered} calls)" if reporting < answered else "")


def cost_text(llm: Priced | None) -> str:
    """LLM cost: "$ 1.23", "unpriced" when no answered call has a price (scripted or replayed
    answers), "$ 1.23 (+4 unpriced calls)" when some have none; "-" without calls."""
    if not llm or not llm.get("calls"):
        return "-"
    unpriced = llm.get("calls_without_cost") or 0
    answered = llm["calls"] - (llm.get("failed_calls") or 0)
    if unpriced and unpriced >= answered:
        return "unpriced"
    text = f"$ {llm.get('cost', 0.0):.2f}"
    if unpriced:
        text += f" (+{unpriced} unpriced call{'s' if unpriced != 1 else ''})"
    return text


def calls_text(stats: CallStats, kind: str) -> str:
    """The number of calls of a kind, "12 kernel", with the ones answered from the local cache:
    "12 kernel (2 cached)"."""
    cached = stats.get("cached_calls") or 0
    return f"{stats['calls']} {kind}" + (f" ({cached} cached)" if cached else "")


def evaluations_text(stats: EvaluationStats | None,
                     units: dict[str, str] | None = None) -> tuple[str, str, str]:
    """(evaluations, time total, time p50) of a series: the evaluations run, then the reused
    verdicts and answers without a kernel apart ("5 + 1 reused + 1 no kernel"); run evaluations
    without a ``wall_s`` are named after the total; "-" without evaluations."""
    if stats is None:
        return ("-", "-", "-")
    count = f"{stats['run']}"
    if stats["reused"]:
        count += f" + {stats['reused']} reused"
    if stats[FIELD_NO_KERNEL]:
        count += f" + {stats[FIELD_NO_KERNEL]} no kernel"
    units = units or {}
    total = seconds_text(stats["time_total_s"], units.get("eval time"))
    missing = stats["run"] - stats["timed"]
    if missing and stats["timed"]:
        total += f" ({missing} without wall_s)"
    return (count, total, seconds_text(stats["time_p50_s"], units.get("eval p50")))


@dataclass(frozen=True)
class Row:
    """One row of the table: ``label``, the series' name ("" after its first row), ``method``,
    ``model`` (of its calls: "all models" for the rows over several, None when the calls name
    none), ``kind`` of calls (None for a series without calls), ``llm`` (:func:`call_stats`) and
    ``evaluations`` (:func:`evaluation_stats`; on the series' first row only), each or None."""

    label: str
    method: str
    model: str | None = None
    kind: str | None = None
    llm: CallStats | None = None
    evaluations: EvaluationStats | None = None


def rows(usage: Usage) -> list[Row]:
    """The table's rows: per series, one row of its kernel calls; with planning calls, also one
    of its plan calls and one of all its calls; with several models, those rows per model and
    then for all models. The series' name and its evaluation figures are on its first row."""
    out = []
    for label, entry in usage.items():
        if entry["llm"] is None:
            out.append(Row(label, entry["method"], evaluations=entry["evaluations"]))
            continue
        models = entry.get("models") or []
        groups: list[tuple[str | None, CallsByKind]] = [(models[0] if len(models) == 1 else None,
                                                             entry["llm"])]
        if entry.get("by_model"):
            groups = [*entry["by_model"].items(), ("all models", entry["llm"])]
        first = True
        for model, kinds in groups:
            shown = ("kernel", "plan", "all") if kinds["plan"]["calls"] else ("kernel",)
            for kind in shown:
                out.append(Row(label if first else "", entry["method"], model, kind, kinds[kind],
                               entry["evaluations"] if first else None))
                first = False
    return out


def title(usage: Usage) -> str:
    """The table's title in the HTML report: without LLM calls, the evaluation time alone."""
    return f"{TITLE if with_llm(usage) else 'Evaluation time'} per method · target"


def with_llm(usage: Usage) -> bool:
    return any(entry["llm"] is not None for entry in usage.values())


LLM_COLUMNS = ("calls", "failed", "latency p50", "latency p90", "latency total", "tokens in / out",
               "cached input", "cost")
EVAL_COLUMNS = ("evaluations", "eval time", "eval p50")
NUMERIC = frozenset({"failed", "latency p50", "latency p90", "latency total", "tokens in / out",
                     "eval time", "eval p50"})


def columns(usage: Usage) -> list[str]:
    """The table's columns: the LLM ones only when a series has calls, the model column only
    when a series' calls used several models."""
    cols = ["method · target"]
    if with_llm(usage):
        if any(entry.get("by_model") for entry in usage.values()):
            cols.append("model")
        cols += LLM_COLUMNS
    return cols + list(EVAL_COLUMNS)


# The duration columns and the figure each shows (one unit per column: :func:`column_units`).
TIME_COLUMNS = {"latency p50": ("llm", "latency_p50_s"), "latency p90": ("llm", "latency_p90_s"),
                "latency total": ("llm", "latency_total_s"), "eval time": ("evaluations", "time_total_s"),
                "eval p50": ("evaluations", "time_p50_s")}


def column_units(table: Iterable[Row]) -> dict[str, str]:
    """The unit of each duration column over the rows of a table (its longest value's)."""
    table = list(table)
    return {col: time_unit(((row.llm if part == "llm" else row.evaluations) or {}).get(key)
                           for row in table)
            for col, (part, key) in TIME_COLUMNS.items()}


def cells(row: Row, cols: list[str], units: dict[str, str] | None = None) -> list[str]:
    """A row's cells (plain text), in the order of ``cols``; durations in ``units`` (column ->
    unit, :func:`column_units` of the whole table; else each value's own)."""
    llm, kind = row.llm, row.kind
    units = units or {}
    count, total, p50 = evaluations_text(row.evaluations, units) if row.label else ("", "", "")
    values = {"method · target": row.label, "model": row.model or "", "evaluations": count,
              "eval time": total, "eval p50": p50}
    if llm is None:
        values.update({c: "-" for c in LLM_COLUMNS})
    else:
        values.update({
            "calls": calls_text(llm, kind or ""), "failed": str(llm["failed_calls"]),
            "latency p50": seconds_text(llm["latency_p50_s"], units.get("latency p50")),
            "latency p90": seconds_text(llm["latency_p90_s"], units.get("latency p90")),
            "latency total": seconds_text(llm["latency_total_s"], units.get("latency total")),
            "tokens in / out": f"{tokens_text(llm, 'input_tokens')} / {tokens_text(llm, 'output_tokens')}",
            "cached input": share_text(llm), "cost": cost_text(llm)})
    return [values[c] for c in cols]


TITLE = "LLM calls and evaluation time"
CALLS_CAPTION = ("latency p50 / p90: interpolated between the closest ranks, over the calls that "
                 "record a latency")
EVAL_CAPTION = "eval time, eval p50: wall time of the evaluations run; reused verdicts took none"


def print_usage(usage: Usage | None, console: Any,
                seeded: Iterable[str] = ()) -> None:
    """The table in the terminal, as two: the LLM calls (for a run that has some) and the
    evaluation time, per method · target (nothing for a run without either); the series of the
    methods in ``seeded`` are marked "(seeded)"."""
    from rich.markup import escape
    from rich.table import Table

    if not usage:
        return
    flagged = set(seeded)

    def table(title: str, cols: list[str], shown: list[Row], caption: str) -> None:
        out = Table(title=title, caption=caption)
        for col in cols:
            out.add_column(col, justify="right" if col in NUMERIC else "left",
                           no_wrap=col in ("method · target", "calls", "tokens in / out"))
        units = column_units(shown)
        for row in shown:
            texts = [escape(c) for c in cells(row, cols, units)]
            if row.label and row.method in flagged:
                texts[0] += " [yellow](seeded)[/]"
            out.add_row(*texts)
        console.print(out)

    cols = columns(usage)
    if with_llm(usage):
        calls = [c for c in cols if c not in EVAL_COLUMNS]
        table("LLM calls per method · target", calls, [r for r in rows(usage) if r.llm is not None],
              CALLS_CAPTION)
    timed = [Row(label, entry["method"], evaluations=entry["evaluations"])
             for label, entry in usage.items() if entry["evaluations"] is not None]
    if timed:
        table("evaluation time per method · target", ["method · target", *EVAL_COLUMNS], timed, EVAL_CAPTION)


__all__ = ["KINDS", "TITLE", "Row", "by_kind", "call_kind", "call_stats", "cells", "column_units", "columns",
           "cost_text",
           "evaluation_stats", "percentile", "print_usage", "rows", "seconds_text", "share_text",
           "summarize_usage", "title", "with_llm"]
