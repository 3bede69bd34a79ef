"""Summaries of a run directory, derived from its events only.

Per task: the best verdict and speedup of each method. Per method: compile and
correct rates over samples, fast_0@N and fast_1@N, and the JAXBench geomean
(``jaxbench.report.metrics``). Samples are a method's evaluated candidates in budget-slot
order; shipped seed kernels evaluated by ``evolve`` are not samples. Without timing
(interpret mode) speedups do not exist, so ``correct@N`` stands in for fast_p@N. Tasks are in
the registry's catalogue order (1p, 2p, ..., 17p, 18k, ...), never sorted as strings.

Each failing sample is put in a category of the failure taxonomy (``taxonomy.py``: static
policy, trace error, VMEM budget, Triton rule, ..., from its status, stage and message), counted
per series (method · target). A run without a ``run_end`` event, or with evaluations its
executor lost, says how far it got (``progress``): N of M evaluations where the run directory
tells M, "unfinished: no run_end" where it does not.

Kernel files a ``jaxbench run --kernels DIR`` left out (misnamed, another target; its
``kernels_skipped`` event) are listed (``skipped_files``).

A method that starts from the task's shipped seed kernels (``seeded`` in the run's config and
its ``task_done`` events) is flagged, so it is not compared with an unseeded one unawares.
LLM calls without a price (scripted and replayed answers) are counted as unpriced, never as $0.
What the run spent (``usage``: LLM calls with their latency, tokens and cost, kernel and plan
calls apart, and evaluation time, per method · target) is computed by ``usage.py``.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, NotRequired, TypedDict

from jaxbench.contract import FIELD_CORRECT, FIELD_TIME, EvaluationResult, Status, status_rank
from jaxbench.report import metrics, taxonomy
from jaxbench.report.data import (
    compiled,
    in_catalogue_order,
    is_correct,
    is_seed,
    method_of,
    read_evaluation,
    replay_of,
    replay_text,
    require_run_dir,
    series_label,
)
from jaxbench.report.usage import Priced, Usage, print_usage, summarize_usage
from jaxbench.runs import MANIFEST, read_events, read_plan

N_VALUES = (1, 8, 32, 144)


# Methods whose samples of a task are independent draws (Best-of-N; `jaxbench run`, one kernel
# a task): their @k figures are the unbiased pass@k estimates over all samples. The others
# (iterative refinement, Autocomp's beam, evolution) draw a trajectory, each sample built on
# the ones before: their @N figures count the first N samples in the order drawn.
INDEPENDENT_SAMPLES = ("best_of_n",)
AT_K = {True: "unbiased pass@k over the task's samples (independent draws)",
        False: "within the first N samples, in the order drawn (a trajectory)"}


def independent(method: str) -> bool:
    return method in INDEPENDENT_SAMPLES or method.startswith("run:")


class Drawn(NamedTuple):
    """A sample of a method and its place in the order drawn: its budget slot (``sample``), or
    for an evaluation without one its line among the run's events."""

    order: int
    result: EvaluationResult


class LlmTotals(Priced):
    """A method's LLM calls as the summary totals them (``"llm"`` of its entry): calls, failed
    calls, calls without a price, cost and tokens (``"usage"`` has the full figures)."""

    input_tokens: int
    output_tokens: int


class MethodSummary(TypedDict):
    """A method's (``"methods"``) or a series' figures over its samples (:func:`_method_summary`):
    rates, ``correct_at`` (N -> rate; ``at_k`` says how N is read), with timing the fast_p@N
    rates and the geomeans, with LLM calls their totals; ``seeded`` (starts from the shipped
    seed kernels) is added by :func:`summarize`."""

    tasks: int
    samples: int
    compile_rate: float
    correct_rate: float
    at_k: str
    correct_at: dict[str, float]
    fast_0_at: NotRequired[dict[str, float]]
    fast_1_at: NotRequired[dict[str, float]]
    geomean_speedup: NotRequired[float]
    geomean_speedup_unfloored: NotRequired[float | None]
    llm: NotRequired[LlmTotals]
    seeded: NotRequired[bool]


class SeriesSummary(MethodSummary):
    """A series' (method · target) entry of ``"series"``: its method and target (None where the
    evaluations name none) before the method's figures."""

    method: str
    target: str | None


class TaskSummary(TypedDict):
    """A task's evaluations by one method or series (``"tasks"``, ``"series_tasks"``): how many,
    how many correct (``correct``, spelt :data:`~jaxbench.contract.FIELD_CORRECT` where read or
    written), the best status and the best speedup of a correct one (None without)."""

    samples: int
    correct: int
    best_status: str | None
    best_speedup: float | None


class SpanFigures(TypedDict):
    """One span of :func:`spans_summary`: total seconds, share of the summed wall, median."""

    total_s: float
    share: float
    median_s: float


class Spans(TypedDict):
    """Where the evaluations' wall time went (:func:`spans_summary`)."""

    evaluations: int
    wall_s: float
    median_wall_s: float
    coverage: float
    spans: dict[str, SpanFigures]


class JudgeWarning(TypedDict):
    """An evaluation's judge warning (:func:`judge_warnings`), its text cut to 400 characters."""

    task: str
    target: str | None
    status: str
    kind: str
    text: str


class JudgeWarnings(TypedDict):
    """``counts`` per warning kind (:data:`JUDGE_WARNINGS`) and the first ``rows``."""

    counts: dict[str, int]
    rows: list[JudgeWarning]


class Summary(TypedDict):
    """The report of a run directory (:func:`summarize`; ``jaxbench report --json``): the run's
    config (from its manifest), ``methods`` and ``series`` (method · target) with their
    figures, failures per series and taxonomy category, ``usage`` (``usage.py``), per task the
    best of each method (``tasks``) and series (``series_tasks``), in catalogue order; for a
    replay run (`jaxbench run --replay`), ``replay_of``: whose inputs it drew again."""

    run: str
    config: dict[str, Any]
    replay_of: dict[str, Any] | None
    modes: list[str]
    timed: bool
    note: str | None
    progress: Progress
    methods: dict[str, MethodSummary]
    series: dict[str, SeriesSummary]
    failures: dict[str, dict[str, int]]
    usage: Usage
    skipped_files: list[str]
    judge_warnings: JudgeWarnings
    spans: Spans | None
    tasks: dict[str, dict[str, TaskSummary]]
    series_tasks: dict[str, dict[str, TaskSummary]]


def correct_at_n(samples: dict[str, list[metrics.Sample]], n: int) -> float:
    """Fraction of tasks with a correct sample among the first ``n`` (timing not needed)."""
    if not samples:
        return 0.0
    return sum(any(ok for ok, _ in seq[:n]) for seq in samples.values()) / len(samples)


def summarize(run_dir: str | os.PathLike[str]) -> Summary:
    """The report of a run directory as one JSON-ready dict."""
    path = require_run_dir(run_dir)
    manifest = json.loads((path / MANIFEST).read_text())
    config = manifest.get("config", {})
    # method -> task -> its samples, and the same per series (method · target), in file order
    evaluations: dict[str, dict[str, list[Drawn]]] = defaultdict(lambda: defaultdict(list))
    by_series: dict[str, dict[str, list[Drawn]]] = defaultdict(lambda: defaultdict(list))
    llm: dict[str, LlmTotals] = defaultdict(lambda: {"calls": 0, "input_tokens": 0,
                                                          "output_tokens": 0, "cost": 0.0,
                                                          "calls_without_cost": 0,
                                                          "failed_calls": 0})
    modes = set()
    seeded = {config["method"]} if config.get("seeded") and config.get("method") else set()
    events = list(read_events(path))
    # every LLM call and evaluation (seed kernels too), for "usage"
    call_events: list[dict[str, Any]] = []
    evaluated: list[EvaluationResult] = []
    for index, event in enumerate(events):
        result = read_evaluation(event)
        if result is not None:
            evaluated.append(result)
            if is_seed(result):
                continue
            sample = result.extra.get("sample")
            drawn = Drawn(sample if sample is not None else index, result)
            evaluations[method_of(result)][result.task].append(drawn)
            by_series[series_label(result)][result.task].append(drawn)
            modes.add(result.mode)
        elif event.get("type") == "llm_call":
            call_events.append(event)
            totals = llm[event.get("method", "?")]
            totals["calls"] += 1
            totals["input_tokens"] += event.get("input_tokens") or 0
            totals["output_tokens"] += event.get("output_tokens") or 0
            if event.get("error"):  # a failed request: no answer, nothing to price
                totals["failed_calls"] += 1
            elif event.get("cost") is None:
                totals["calls_without_cost"] += 1
            else:
                totals["cost"] += event["cost"]
        elif event.get("type") == "task_done" and event.get("seeded") and event.get("method"):
            seeded.add(event["method"])
    timed = "device" in modes
    methods: dict[str, MethodSummary] = {
        name: {**_method_summary(by_task, config.get("budget"), timed, llm.get(name), name),
               "seeded": name in seeded}
        for name, by_task in sorted(evaluations.items())}
    firsts = {label: next(iter(by_task.values()))[0].result for label, by_task in by_series.items()}
    per_method = Counter(method_of(e) for e in firsts.values())
    series: dict[str, SeriesSummary] = {}
    for label, by_task in sorted(by_series.items()):
        name = method_of(firsts[label])
        # LLM calls name their method, not a target: they are shown with its series when it
        # has one (an optimize run has one target)
        calls = llm.get(name) if per_method[name] == 1 else None
        series[label] = {"method": name, "target": firsts[label].target or None,
                         **_method_summary(by_task, config.get("budget"), timed, calls, name),
                         "seeded": name in seeded}
    tasks: dict[str, dict[str, TaskSummary]] = defaultdict(dict)
    for name, by_task in evaluations.items():
        for task_id, drawn in by_task.items():
            tasks[task_id][name] = _task_summary([d.result for d in drawn])
    series_tasks: dict[str, dict[str, TaskSummary]] = defaultdict(dict)
    for label, by_task in sorted(by_series.items()):
        for task_id, drawn in by_task.items():
            series_tasks[task_id][label] = _task_summary([d.result for d in drawn])
    return {
        "run": str(path),
        "config": config,
        "replay_of": replay_of(manifest),
        "modes": sorted(m for m in modes if m),
        "timed": timed,
        "note": None if timed else
        "no timed evaluations (interpret mode): speedups need a device; correct@N is reported",
        "progress": progress(config, events, read_plan(path), evaluated, path=str(path)),
        "methods": methods,
        "series": series,
        "failures": {label: taxonomy.count(d.result for drawn in by_task.values() for d in drawn)
                     for label, by_task in sorted(by_series.items())},
        "usage": summarize_usage(call_events, evaluated),
        "skipped_files": [str(f) for e in events if e.get("type") == "kernels_skipped"
                          and isinstance(e.get("files"), list) for f in e["files"]],
        "judge_warnings": judge_warnings(evaluated),
        "spans": spans_summary(evaluated),
        "tasks": {task_id: tasks[task_id] for task_id in in_catalogue_order(tasks)},
        "series_tasks": {task_id: series_tasks[task_id] for task_id in in_catalogue_order(series_tasks)},
    }


RESUME = ("no run_end: the run has not finished (interrupted, or still going; rerun its command to "
          "resume)")


class Progress(TypedDict):
    """How far a run got (:func:`progress`): ``"progress"`` in the summary's JSON."""

    finished: bool
    evaluations: int
    planned: int | None
    upper_bound: bool
    lost: int
    text: str | None
    resume: str | None


def progress(config: dict[str, Any], events: list[dict[str, Any]], plan: list[str] | None = None,
             evaluations: list[EvaluationResult] | None = None, *,
             path: str | None = None) -> Progress:
    """How far the run got: ``evaluations`` written (an optimize run's samples: the seed kernels
    evolve starts from are not), ``planned`` (None when the run directory does not tell; an
    upper bound for an optimize run, whose methods may stop under budget),
    ``lost`` (evaluation_lost jobs not evaluated since), ``finished`` (a run_end event),
    ``resume`` (the command an interrupted run_end recorded, which the banner shows) and
    ``text``, the banner of an incomplete run (None when complete).

    A `jaxbench run` records its plan (its job keys) in the manifest: ``plan``. An unfinished
    run's missing evaluations are the planned jobs without one; a run directory from before
    plans were recorded says so, and tells only what its events show. A finished run's run_end
    counts its evaluations. An optimize run plans its tasks, each spending at most its budget.
    ``evaluations``: the results of ``events``' evaluation events, where the caller has read them
    (:func:`~jaxbench.report.data.read_evaluation`)."""
    # (an optimize run stopped by Ctrl-C ends with an interrupted run_end: not finished)
    end = next((e for e in events if e.get("type") == "run_end" and not e.get("interrupted")),
               None)
    resume = None if end is not None else _resume_text(events)
    if evaluations is None:
        evaluations = [r for r in map(read_evaluation, events) if r is not None]
    jobs = {e.extra["job"] for e in evaluations if isinstance(e.extra.get("job"), str)}
    lost = {e["job"] for e in events if e.get("type") == "evaluation_lost"
            and isinstance(e.get("job"), str)} - jobs
    out: Progress = {"finished": end is not None, "evaluations": len(evaluations),
                     "planned": None, "upper_bound": False, "lost": len(lost), "text": None,
                     "resume": _resume_command(events) if end is None else None}
    command = config.get("command")
    if command == "serve":  # a service never finishes: it stops (cleanly or not) and restarts
        _serve_progress(out, events, path)
        return out
    lost_text = (f"; {len(lost)} lost (their Ray workers or nodes died on every retry: "
                 "evaluation_lost events)") if lost else ""
    unknown = "the planned total is not known from this run directory"
    if command == "run":
        _run_progress(out, end, jobs, plan, lost_text, resume)
        if plan is None:
            unknown = ("its plan was not recorded (a run directory from before runs recorded "
                       "their plan), so the planned total is not known")
    elif command == "optimize" and end is None:
        _optimize_progress(out, config, events, evaluations, resume)
    if end is None and out["text"] is None:
        noun = "samples" if command == "optimize" else "evaluations"
        out["text"] = f"unfinished: {resume}; {out['evaluations']} {noun} so far, {unknown}{lost_text}"
    return out


def _serve_progress(out: Progress, events: list[dict[str, Any]], path: str | None) -> None:
    """A ``jaxbench serve`` run directory: whether the service's last start ended in a clean
    stop (its ``serve_stop``), when, and the command that restarts it (queued submissions
    resume). A clean stop is not an unfinished run; a start without a stop is a service that is
    running or was killed."""
    import time

    def when(event: dict[str, Any]) -> str:
        stamp = event.get(FIELD_TIME)
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(stamp)) \
            if isinstance(stamp, (int, float)) else "at an unrecorded time"

    marks = [e for e in events if e.get("type") in ("serve_start", "serve_stop")]
    restart = f"jaxbench serve --out {path}" if path else "jaxbench serve --out RUN_DIR"
    n = out["evaluations"]
    so_far = f"{n} evaluation{'s' if n != 1 else ''}"
    out["resume"] = restart
    if marks and marks[-1].get("type") == "serve_stop":
        out["finished"] = True
        out["text"] = (f"service stopped cleanly at {when(marks[-1])} ({so_far}); restart it "
                       f"with `{restart}` (submissions still queued resume)")
    elif marks:
        out["text"] = (f"service started at {when(marks[-1])} and not stopped cleanly since (still "
                       f"running, or killed; {so_far}); restart it with `{restart}` (submissions "
                       "still queued resume)")
    else:
        out["text"] = f"service never started ({so_far}); start it with `{restart}`"


def _run_progress(out: Progress, end: dict[str, Any] | None, jobs: set[str],
                  plan: list[str] | None, lost_text: str, resume: str | None) -> None:
    """A `jaxbench run`'s progress: its run_end's count, else its recorded plan's jobs."""
    done = len(jobs) if jobs else out["evaluations"]
    if end is not None and isinstance(end.get("evaluations"), int):
        out["planned"] = end["evaluations"]
    elif end is None and plan is not None:
        planned_jobs = set(plan)
        done = len(jobs & planned_jobs)
        out["planned"] = len(planned_jobs)
    out["evaluations"] = done
    planned = out["planned"]
    if planned is not None and done < planned:
        why = lost_text + (f"; {resume}" if end is None else "")
        out["text"] = f"incomplete: {done} of {planned} evaluations{why}"


def _optimize_progress(out: Progress, config: dict[str, Any],
                       events: list[dict[str, Any]], evaluations: list[EvaluationResult],
                       resume: str | None) -> None:
    """An unfinished optimize run's progress: its samples of up to tasks x budget."""
    samples = [e for e in evaluations if not is_seed(e)]
    out["evaluations"] = len(samples)
    tasks, budget, method = config.get("tasks"), config.get("budget"), config.get("method")
    if isinstance(tasks, list) and tasks and isinstance(budget, int) and \
            all(e.extra.get("method") == method for e in samples):
        done = {e.get("task") for e in events if e.get("type") == "task_done"
                and e.get("method") == method}
        out["planned"], out["upper_bound"] = len(tasks) * budget, True
        n = f"{len(tasks)} task{'s' if len(tasks) != 1 else ''}"
        out["text"] = (f"incomplete: {len(samples)} of up to {len(tasks) * budget} samples ({n} x budget "
                       f"{budget}); {len(done & set(tasks))} of {n} finished; {resume}")


def _interruption(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last interrupted ``run_end`` (Ctrl-C or SIGTERM stopped the run), None without one."""
    stops = [e for e in events if e.get("type") == "run_end" and e.get("interrupted")]
    return stops[-1] if stops else None


def _resume_command(events: list[dict[str, Any]]) -> str | None:
    """The command that resumes the run, as its interrupted ``run_end`` recorded it."""
    stop = _interruption(events)
    command = stop.get("resume") if stop else None
    return command if isinstance(command, str) and command else None


def _resume_text(events: list[dict[str, Any]]) -> str:
    """Why the run is not finished and how to go on: the recorded resume command of an
    interrupted run, else :data:`RESUME`."""
    stop = _interruption(events)
    command = _resume_command(events)
    if stop is None or command is None:
        return RESUME
    by = f" by {stop['signal']}" if isinstance(stop.get("signal"), str) else ""
    return f"interrupted{by}; resume with: {command}"


def _task_summary(evals: list[EvaluationResult]) -> TaskSummary:
    speeds = [e.speedup for e in evals if is_correct(e) and e.speedup]
    statuses = [e.status for e in evals]
    best_status = Status.CORRECT if Status.CORRECT in statuses else max(
        statuses, key=status_rank, default=None)
    return {"samples": len(evals), FIELD_CORRECT: statuses.count(Status.CORRECT),
            "best_status": best_status, "best_speedup": max(speeds) if speeds else None}


def _method_summary(by_task: Mapping[str, list[Drawn]], budget: int | None, timed: bool,
                    llm: LlmTotals | None, method: str = "") -> MethodSummary:
    samples: dict[str, list[metrics.Sample]] = {}
    flat: list[EvaluationResult] = []
    for task_id, drawn in by_task.items():
        ordered = [d.result for d in sorted(drawn, key=lambda d: d.order)]
        samples[task_id] = [(is_correct(e), e.speedup) for e in ordered]
        flat += ordered
    longest = max((len(s) for s in samples.values()), default=0)
    limit = budget or longest
    n_values = [n for n in N_VALUES if n <= limit] or [limit]
    summary: MethodSummary = {
        "tasks": len(samples),
        "samples": len(flat),
        "compile_rate": metrics.rate([compiled(e) for e in flat]),
        "correct_rate": metrics.rate([is_correct(e) for e in flat]),
    }
    draws = independent(method)
    summary["at_k"] = AT_K[draws]
    if draws:
        summary["correct_at"] = {str(n): metrics.correct_at_k(samples, n) for n in n_values}
    else:
        summary["correct_at"] = {str(n): correct_at_n(samples, n) for n in n_values}
    if timed:
        for name, p in (("fast_0_at", 0.0), ("fast_1_at", 1.0)):
            summary[name] = {str(n): metrics.fast_p_at_k(samples, p, n) if draws else
                             metrics.fast_p_at_n(samples, p, n) for n in n_values}
        summary["geomean_speedup"] = metrics.geomean_speedup(samples)
        summary["geomean_speedup_unfloored"] = metrics.geomean_speedup_unfloored(samples)
    if llm:
        summary["llm"] = dict(llm)
    return summary


SEEDED_FLAG = "seeded (starts from the shipped seed kernels)"


def print_summary(summary: Summary, console: Any) -> None:
    """Rich tables: one row per task, then one row per series (method · target), the LLM calls
    and the evaluation time per series (``usage.py``) and the failure taxonomy."""
    from rich.markup import escape
    from rich.table import Table

    rows_of = summary.get("series") or summary["methods"]
    methods = list(rows_of)
    seeded_methods = [name for name, m in summary["methods"].items() if m.get("seeded")]
    seeded = [name for name in methods if rows_of[name].get("seeded")] + seeded_methods

    def label(name: str) -> str:
        return f"{name} [yellow](seeded)[/]" if name in seeded else name

    tasks = Table(title=f"best per task ({summary['run']})")
    tasks.add_column("task")
    for name in methods:
        tasks.add_column(label(name))
    for task_id, by_method in (summary.get("series_tasks") or summary["tasks"]).items():
        cells = []
        for name in methods:
            t = by_method.get(name)
            if t is None:
                cells.append("-")
                continue
            color = "green" if t["best_status"] == Status.CORRECT else "red"
            speed = f" {t['best_speedup']:.2f}x" if t["best_speedup"] else ""
            cells.append(f"[{color}]{t['best_status']}[/]{speed} ({t[FIELD_CORRECT]}/{t['samples']})")
        tasks.add_row(task_id, *cells)
    console.print(tasks)

    table = Table(title="per method · target")
    columns = ["method · target", "tasks", "samples", "compile", FIELD_CORRECT]
    any_method = next(iter(rows_of.values()), {})
    n_values = list(any_method.get("correct_at", {}))
    columns += [f"correct@{n}" for n in n_values]
    if summary["timed"]:
        columns += [f"fast_0@{n}" for n in n_values] + [f"fast_1@{n}" for n in n_values]
        columns += ["geomean", "geomean (correct)"]
    for col in columns:
        table.add_column(col, no_wrap=col == "method · target")
    for name, m in rows_of.items():
        row = [label(name), str(m["tasks"]), str(m["samples"]), f"{m['compile_rate']:.0%}",
               f"{m['correct_rate']:.0%}"]
        row += [f"{m['correct_at'].get(n, 0):.0%}" for n in n_values]
        if summary["timed"]:
            row += [f"{m['fast_0_at'].get(n, 0):.0%}" for n in n_values]
            row += [f"{m['fast_1_at'].get(n, 0):.0%}" for n in n_values]
            unfloored = m["geomean_speedup_unfloored"]
            row += [f"{m['geomean_speedup']:.3f}x",
                    f"{unfloored:.3f}x" if unfloored is not None else "-"]
        table.add_row(*row)
    kinds = sorted({m.get("at_k") for m in rows_of.values() if m.get("at_k")})
    table.caption = "; ".join(
        f"@N for {', '.join(label(n) for n, m in rows_of.items() if m.get('at_k') == k)}: {k}"
        for k in kinds) or None
    console.print(table)
    print_usage(summary.get("usage"), console, seeded_methods)
    print_spans(summary.get("spans"), console)
    print_failures(summary.get("failures") or {}, console)
    for name in seeded_methods:
        console.print(f"{name}: {SEEDED_FLAG}; compare it with an unseeded method knowingly")
    if summary["note"]:
        console.print(f"note: {summary['note']}")
    if summary.get("replay_of"):
        console.print(f"[yellow]{escape(replay_text(summary['replay_of']))}[/]")
    if summary.get("skipped_files"):
        console.print(f"[yellow]{escape(skipped_text(summary['skipped_files']))}[/]")
    warned = summary.get("judge_warnings") or {}
    if warned.get("counts"):
        counts = ", ".join(f"{kind} {n}" for kind, n in warned["counts"].items())
        console.print(f"[yellow]judge warnings (the verdict stands; the judge could not decide "
                      f"everything): {escape(counts)}[/]")
    text = (summary.get("progress") or {}).get("text")
    if text:
        console.print(f"[bold yellow]{escape(text)}[/]")


def spans_summary(evaluations: list[EvaluationResult]) -> Spans | None:
    """Where the evaluations' wall time went (each result's ``spans``): per span the total
    seconds, its share of the summed wall and the median over the evaluations that have it;
    ``coverage``, the spans' sum over the wall. None when no evaluation records spans (runs
    made before they were recorded)."""
    import statistics

    timed = [(e.spans, e.wall_s) for e in evaluations if isinstance(e.spans, Mapping)
             and isinstance(e.wall_s, (int, float)) and e.wall_s > 0]
    if not timed:
        return None
    wall = sum(wall_s for _, wall_s in timed)
    names: dict[str, list[float]] = defaultdict(list)
    for spans_of, _ in timed:
        for name, seconds in spans_of.items():
            if isinstance(seconds, (int, float)):
                names[name].append(float(seconds))
    spans = {name: {"total_s": round(sum(v), 3), "share": sum(v) / wall,
                    "median_s": round(statistics.median(v), 3)}
             for name, v in sorted(names.items(), key=lambda kv: -sum(kv[1]))}
    return {"evaluations": len(timed), "wall_s": round(wall, 3),
            "median_wall_s": round(statistics.median(wall_s for _, wall_s in timed), 3),
            "coverage": sum(v["total_s"] for v in spans.values()) / wall, "spans": spans}


# Spans whose name alone misleads, shown with what they measure (the results keep the names).
SPAN_LABELS = {
    "probe": "probe: the TPU/GPU interpreters' checks (not the chip probe)",
    "second_fill": "second_fill: the uninitialised-memory run",
}


def span_label(name: str) -> str:
    return SPAN_LABELS.get(name, name)


def print_spans(spans: Spans | None, console: Any, most: int = 12) -> None:
    """The spans' table: the largest first, the rest summed in one row."""
    from rich.table import Table

    if not spans:
        return
    table = Table(title=f"where the time went ({spans['evaluations']} evaluations, median wall "
                        f"{spans['median_wall_s']:.1f} s, spans cover {spans['coverage']:.0%})")
    for col in ("span", "total s", "share", "median s"):
        table.add_column(col)
    rows = list(spans["spans"].items())
    for name, v in rows[:most]:
        table.add_row(span_label(name), f"{v['total_s']:.1f}", f"{v['share']:.1%}",
                      f"{v['median_s']:.2f}")
    if len(rows) > most:
        rest = rows[most:]
        table.add_row(f"{len(rest)} more", f"{sum(v['total_s'] for _, v in rest):.1f}",
                      f"{sum(v['share'] for _, v in rest):.1%}", "")
    console.print(table)


# Warnings of the judge that a report shows: what it could not decide and set aside (a
# verdict stands beside each). Keys: the warning's own prefix.
JUDGE_WARNINGS = {
    "smem_uncertain": "GPU shared memory over the chip's limit by the estimate only (Triton's "
                      "compiler did not decide)",
    "vmem_uncertain": "TPU VMEM within the calibration margin over the limit",
    "tool fault": "one of JAX's tools crashed inside its own code; the verdict rests on the "
                  "other checks",
}


def judge_warnings(evaluations: Iterable[EvaluationResult], most: int = 200) -> JudgeWarnings:
    """The evaluations that carry a judge warning (:data:`JUDGE_WARNINGS`): ``counts`` per kind
    and up to ``most`` ``rows`` (task, target, status, kind, text)."""
    counts: dict[str, int] = {}
    rows: list[JudgeWarning] = []
    for result in evaluations:
        for text in result.warnings:
            if not isinstance(text, str):
                continue
            kind = next((k for k in JUDGE_WARNINGS if text.startswith(k)), None)
            if kind is None:
                continue
            counts[kind] = counts.get(kind, 0) + 1
            if len(rows) < most:
                rows.append({"task": result.task, "target": result.target or None,
                             "status": result.status, "kind": kind, "text": text[:400]})
    return {"counts": counts, "rows": rows}


def skipped_text(files: list[str]) -> str:
    """The kernel files `jaxbench run --kernels DIR` left out, in one line."""
    n = len(files)
    return (f"{n} kernel file{'s' if n != 1 else ''} in the kernel directory "
            f"{'were' if n != 1 else 'was'} not evaluated: {'; '.join(files)}")


def failures_by_category(failures: dict[str, dict[str, int]]) -> list[str]:
    """The categories with at least one failure, in the taxonomy's order."""
    seen = {c for counts in failures.values() for c in counts}
    return [c for c in taxonomy.CATEGORIES if c in seen]


def print_failures(failures: dict[str, dict[str, int]], console: Any) -> None:
    """The failure taxonomy: failing samples per category (rows) and series (columns)."""
    from rich.table import Table

    categories = failures_by_category(failures)
    if not categories:
        return
    series = [s for s, counts in failures.items() if counts]
    table = Table(title="failures per method · target (taxonomy)")
    table.add_column("failure", no_wrap=True)
    for name in series:
        table.add_column(name, justify="right")
    table.add_column("meaning")
    for category in categories:
        table.add_row(taxonomy.label(category), *[str(failures[s].get(category, 0) or "-") for s in series],
                      taxonomy.meaning(category))
    console.print(table)
