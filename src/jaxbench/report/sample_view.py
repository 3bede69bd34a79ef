"""The sample view of the HTML report: every sample of an agent run, task by task.

It is a page of its own beside the report, ``NAME.samples.html`` (the report links to it, and
its task table's best kernels to their samples), without charts or the plotting library, so it
is interactive at once whatever the run's size. The page carries only an index (per task and
series: the number of samples, their counts by status and failure category, the best sample's
step), so it loads as fast for 28,800 samples as for 8. Each task's samples (prompts, answers,
kernels, verdicts, lineage) are written beside the page, one script per task,
``NAME.samples/<i>.js``, loaded when the task is opened: a ``<script>`` element, which
browsers load from ``file://`` where ``fetch()`` is refused, so the report opens offline from
disk. Within a task file the sources are kept once each and the
prompt prefix a series' prompts share (the task statement) once per series.

In the page: filters by series, status and failure category (the counts of every task follow
them before anything is loaded); per task and series the samples in lineage order (a sample
under its parent, indented); a sample opens to its verdict, stage, message and figures, its
lineage (parent, children, crossover partner, plan), the model call's facts, the prompt
(collapsed), the answer, the extracted kernel and the diff from its parent (computed in the
browser when the sample is opened). A link ``#sample=TASK/SERIES/STEP`` (URL-encoded parts)
opens a sample; the task table's best kernels link to theirs.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any, NotRequired, TypedDict
from urllib.parse import quote

from jaxbench.contract.result import thaw
from jaxbench.report import taxonomy
from jaxbench.report.data import STATUS_ORDER, RunData
from jaxbench.report.samples import LINEAGE, Sample, best_steps, collect, figures

MIN_PREFIX = 200  # a shared prompt prefix shorter than this is not worth a table entry

# A prompt in a task file: [index of its series' shared prefix in "prefixes", the rest], or
# [-1, the whole prompt] (:func:`_prompt`).
Prompt = list[Any]


class Exchange(TypedDict):
    """An earlier call for a sample's slot that was asked again (``attempts``), or autocomp's
    planning call (``plan``, its prompt whole): its step, prompt and answer (or error)."""

    step: str | None
    prompt: Prompt | str | None
    answer: str


class SampleRow(TypedDict):
    """One sample in a task file (:func:`_task_data`), as ``sample_view.js`` reads it: its
    step, budget slot, parent, depth and children (steps), verdict (status, stage, failure
    category ``cat``, message, figures), its source (``k``, an index into ``sources``; None
    without one), lineage keys, prompt, answer and the model call's facts (``call``: the
    ``llm_call`` event's fields that are set)."""

    step: str
    slot: int | None
    parent: str | None
    depth: int
    children: list[str]
    seed: bool
    status: str
    stage: str | None
    cat: str | None
    message: str
    figs: list[tuple[str, str]]
    k: int | None
    lineage: list[list[Any]]
    prompt: Prompt | None
    answer: str | None
    call: dict[str, Any]
    synthetic: NotRequired[bool]
    truncated: NotRequired[bool]
    rejections: NotRequired[Any]
    attempts: NotRequired[list[Exchange]]
    plan: NotRequired[Exchange]


class TaskSamples(TypedDict):
    """A task file's data (``NAME.samples/<i>.js``): the shared prompt prefixes, the distinct
    sources and per series its samples in lineage order."""

    task: str
    prefixes: list[str]
    sources: list[str]
    series: dict[str, list[SampleRow]]


class SeriesIndex(TypedDict):
    """A task's series in the index: its samples (``n``, seeds apart), their counts by
    "status\tcategory" and the step of the best one (None without)."""

    n: int
    seeds: int
    counts: dict[str, int]
    best: str | None


class TaskIndex(TypedDict):
    """A task in the index: its file (in the sidecar folder) and its series."""

    task: str
    file: str
    series: dict[str, SeriesIndex]


class SampleIndex(TypedDict):
    """The sample view's index (:func:`write_samples`): the sidecar folder, the page, the
    tasks in catalogue order and every series' name."""

    dir: str
    page: str
    tasks: list[TaskIndex]
    series: list[str]


def sidecar_dir(out: Path) -> Path:
    """The folder of a report's per-task sample files: ``NAME.samples`` beside ``NAME.html``."""
    return out.with_name(out.stem + ".samples")


def sample_href(task: str, series: str, step: str, page: str = "") -> str:
    """The link that opens one sample in the sample view (``page``: its file, from the report)."""
    return f"{quote(page)}#sample=" + "/".join(quote(part, safe="") for part in (task, series, step))


def _prompt(text: str | None, prefixes: list[str], prefix: int | None) -> Prompt | None:
    """A prompt as [prefix index, rest] ([-1, whole] when it does not start with the prefix)."""
    if text is None:
        return None
    if prefix is not None and text.startswith(prefixes[prefix]):
        return [prefix, text[len(prefixes[prefix]):]]
    return [-1, text]


def _task_data(run: RunData, task: str, by_series: dict[str, list[Sample]],
               source_cache: dict[str, str | None]) -> TaskSamples:
    """One task's samples as the page reads them."""
    prefixes: list[str] = []
    sources: list[str] = []
    source_index: dict[str, int] = {}
    out: dict[str, list[SampleRow]] = {}
    for series, samples in by_series.items():
        prompts = [s.call["prompt"] for s in samples
                   if s.call and isinstance(s.call.get("prompt"), str)]
        shared = os.path.commonprefix(prompts) if len(prompts) > 1 else ""
        prefix = None
        if len(shared) >= MIN_PREFIX:
            prefix = len(prefixes)
            prefixes.append(shared)
        rows: list[SampleRow] = []
        for s in samples:
            e, keys = s.result, s.result.extra
            key = keys.get("source_file") or e.source_sha256  # "" for neither: not cached
            if key and key in source_cache:
                source = source_cache[key]
            else:
                source = run.source(e)[0]
                if key:
                    source_cache[key] = source
            k = None
            if source is not None:
                if source not in source_index:
                    source_index[source] = len(sources)
                    sources.append(source)
                k = source_index[source]
            call = s.call or {}
            row: SampleRow = {
                "step": s.step, "slot": s.slot, "parent": s.parent, "depth": s.depth,
                "children": s.children, "seed": s.seed, "status": s.status, "stage": s.stage,
                "cat": s.category, "message": s.message, "figs": figures(e), "k": k,
                "lineage": [[name, thaw(keys[name])] for name in LINEAGE
                            if keys.get(name) not in (None, "")],
                "prompt": _prompt(call.get("prompt"), prefixes, prefix),
                "answer": call.get("response") if call else None,
                "call": {k2: v for k2, v in call.items()
                         if k2 in ("model", "finish_reason", "input_tokens", "output_tokens", "cost",
                                   "latency_s", "cached", "error", "docs") and v not in (None, [], "")},
            }
            if e.synthetic:
                row["synthetic"] = True
            if keys.get("truncated"):
                row["truncated"] = True
            if keys.get("novelty_rejections"):
                row["rejections"] = thaw(keys["novelty_rejections"])
            if s.attempts:
                row["attempts"] = [{"step": a["step"], "prompt": _prompt(a.get("prompt"), prefixes, prefix),
                                    "answer": a.get("response") or a.get("error") or ""}
                                   for a in s.attempts]
            if s.plan:
                row["plan"] = {"step": s.plan.get("step"), "prompt": s.plan.get("prompt") or "",
                               "answer": s.plan.get("response") or s.plan.get("error") or ""}
            rows.append(row)
        out[series] = rows
    return {"task": task, "prefixes": prefixes, "sources": sources, "series": out}


def write_samples(run: RunData, out: Path) -> SampleIndex | None:
    """Writes the per-task files of the sample view of the report ``out`` beside it and returns
    the view's index (its page, :func:`page_body`, is written by ``html.write_report``); None,
    and no files (an earlier page removed), for a run without agent samples."""
    folder = sidecar_dir(out)
    found = collect(run)
    if not found:
        if folder.is_dir():
            shutil.rmtree(folder)
        sample_page(out).unlink(missing_ok=True)
        return None
    best = best_steps(run)
    staging = folder.with_name(folder.name + ".tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    tasks: list[TaskIndex] = []
    series_names: set[str] = set()
    source_cache: dict[str, str | None] = {}
    for i, (task, by_series) in enumerate(found.items()):
        data = _task_data(run, task, by_series, source_cache)
        name = f"{i}.js"
        (staging / name).write_text(f"jaxbenchSamples({i},{json.dumps(data, separators=(',', ':'))});\n")
        entry: TaskIndex = {"task": task, "file": name, "series": {}}
        for series, samples in by_series.items():
            series_names.add(series)
            counts: dict[str, int] = {}
            for s in samples:
                if s.seed:
                    continue
                key = f"{s.status}\t{s.category or ''}"
                counts[key] = counts.get(key, 0) + 1
            entry["series"][series] = {"n": sum(not s.seed for s in samples),
                                       "seeds": sum(s.seed for s in samples), "counts": counts,
                                       "best": best.get((task, series))}
        tasks.append(entry)
    if folder.exists():
        shutil.rmtree(folder)
    staging.replace(folder)
    return {"dir": folder.name, "page": sample_page(out).name, "tasks": tasks,
            "series": sorted(series_names)}


def sample_page(out: Path) -> Path:
    """The sample view's page of the report ``out``: ``NAME.samples.html`` beside it."""
    return out.with_name(out.stem + ".samples.html")


def page_body(run: RunData, out: Path, index: SampleIndex, status_colors: dict[str, str]) -> str:
    """The body of the sample view's page (``NAME.samples.html``) of the report ``out``: no
    charts and no plotting library, the index and the script."""
    n = sum(s["n"] for t in index["tasks"] for s in t["series"].values())
    statuses = sorted({k.split("\t")[0] for t in index["tasks"] for s in t["series"].values()
                       for k in s["counts"]},
                      key=lambda st: (STATUS_ORDER[::-1].index(st) if st in STATUS_ORDER else 99, st))
    categories = [c for c in taxonomy.CATEGORIES
                  if any(k.endswith("\t" + c) for t in index["tasks"] for s in t["series"].values()
                         for k in s["counts"])]
    page_index = {**index, "colors": status_colors, "statuses": statuses,
                  "categories": {c: [taxonomy.label(c), taxonomy.meaning(c)] for c in categories}}
    blob = json.dumps(page_index, separators=(",", ":")).replace("</", "<\\/")
    config = run.config
    about = ", ".join(f"{k} {config[k]}" for k in ("method", "model", "budget", "target", "mode")
                      if config.get(k) is not None)
    body = (f"<h1>jaxbench samples: {escape(run.name)}</h1>"
            f"<p>{n:,} samples of {len(index['tasks'])} tasks ({escape(about)}). Open a task to load its "
            f"samples (each under its parent), a sample for its verdict, prompt, answer, kernel and the "
            f"diff from its parent. The charts and tables are in the report: "
            f"<a id=\"report-link\" href=\"{escape(out.name)}\">{escape(out.name)}</a>.</p>"
            f"<div class=\"sv-filters\" id=\"sv-filters\"></div><div id=\"sv-tasks\"></div>"
            f"<script type=\"application/json\" id=\"sv-index\">{blob}</script>"
            f"<script>{sample_script()}</script>")
    return body


@functools.cache
def sample_script() -> str:
    """The sample view's script, ``sample_view.js`` beside this module (package data): reads
    the index, builds the filters and the task entries, loads a task's file with a ``<script>``
    element when it is opened (``fetch()`` is refused on ``file://``), renders a sample's
    details when it is opened, and follows ``#sample=`` links."""
    return resources.files("jaxbench.report").joinpath("sample_view.js").read_text(encoding="utf-8")


def section(index: SampleIndex | None) -> str:
    """The report's pointer to its sample view ('' without one)."""
    if index is None:
        return ""
    n = sum(s["n"] for t in index["tasks"] for s in t["series"].values())
    return (f"<h2 id=\"samples\">Samples</h2><p>{n:,} samples of {len(index['tasks'])} tasks, one by one "
            f"(prompt, answer, kernel, verdict, stage, message, figures, diff from the parent, lineage; "
            f"filtered by status and failure category): <a id=\"samples-link\" href=\"{index['page']}\">"
            f"{index['page']}</a>. The task table's sample column opens a task's best sample.</p>")


SAMPLE_CSS = """
.sv-filters { margin: 8px 0; display: flex; gap: 16px; flex-wrap: wrap; align-items: center;
  font-size: 0.9em; }
.sv-filters label { display: flex; gap: 6px; align-items: center; }
details.sv-task { border: 1px solid #ddd; border-radius: 6px; margin: 4px 0; }
details.sv-task > summary { cursor: pointer; padding: 4px 8px; font-family: ui-monospace, monospace;
  font-size: 0.9em; }
details.sv-task.sv-none > summary { color: #999; }
.sv-body { padding: 4px 12px 12px 12px; }
.sv-series h4 { margin: 10px 0 4px 0; font-size: 0.95em; }
details.sv-sample > summary { cursor: pointer; font-size: 0.85em; padding: 1px 0; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }
details.sv-sample > summary .sv-msg { color: #a00; font-family: ui-monospace, monospace; }
details.sv-sample.sv-target > summary { background: #fff8c4; }
.sv-detail { margin: 4px 0 10px 0; padding: 6px 10px; border-left: 3px solid #ccc; background: #fcfcfc; }
.sv-detail dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 0.85em;
  margin: 0 0 6px 0; }
.sv-detail dt { color: #666; } .sv-detail dd { margin: 0; overflow-wrap: anywhere; }
.sv-detail pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 480px; }
.sv-diff .add { background: #e6ffec; display: block; } .sv-diff .del { background: #ffebe9; display: block; }
.sv-diff .hunk { color: #0550ae; display: block; }
table#tasks td a.sample-link { overflow-wrap: anywhere; }
.sv-best { margin-left: 6px; padding: 0 5px; border-radius: 4px; background: #e8f5e9;
  border: 1px solid #2ca02c;
  font-size: 0.85em; }
"""


__all__ = ["SAMPLE_CSS", "page_body", "sample_href", "sample_page", "sample_script", "section",
           "sidecar_dir", "write_samples"]
