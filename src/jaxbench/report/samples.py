"""The samples of an agent run, one by one: what the model was asked, what it answered, the
kernel taken from the answer, the verdict, and where the sample came from.

Everything is read from the run directory's events (``docs/run-directory.md``): an optimize
run's ``evaluation`` events (``step``, ``sample``, ``parent``, ``origin``, evolve's ``island``,
``generation``, ``crossover_with`` and ``novelty_rejections``, autocomp's ``plan_step``) joined
by (task, method, step) with its ``llm_call`` events (``prompt``, ``response``, tokens, cost),
and the kernel sources kept under ``sources/``. A model call without an evaluation of its own
is attached to the sample it led to: evolve's proposals asked again (``S/retry1`` belongs to the
evaluation of ``S/retry2``, or of ``S``'s last retry) and autocomp's plan (``plan_step``).

Samples of a task and series (method · target) are listed in lineage order: each sample after
its parent, indented one level deeper (a search without lineage, Best-of-N, is a flat list in
budget-slot order). The shipped seed kernels a method starts from are listed as the roots they
are, marked ``seed``, and are not samples (``docs/agents.md``).

Used by the HTML report's sample view (``sample_view.py``) and by ``jaxbench report
--samples`` (:func:`print_samples`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jaxbench.contract import Category, EvaluationResult, Status
from jaxbench.report import taxonomy
from jaxbench.report.data import RunData, in_catalogue_order, is_seed, series_label

# Figures shown with a verdict: (result field, label, format).
FIGURES = (("speedup", "speedup", "{:.3g}x"), ("t_kernel_ms", "t_kernel", "{:.4g} ms"),
           ("t_ref_ms", "t_ref", "{:.4g} ms"), ("roofline_fraction", "roofline", "{:.0%}"),
           ("max_abs_err", "max abs err", "{:.3g}"), ("tol_fraction", "err / tol", "{:.3g}"),
           ("compile_s", "compile", "{:.3g} s"), ("wall_s", "evaluation", "{:.3g} s"))
# Lineage keys an agent writes beside an evaluation's result (its ``extra``), shown as they are.
LINEAGE = ("origin", "mutation", "island", "generation", "crossover_with", "plan_step", "reused_from")
_RETRY = re.compile(r"^(.*)/retry(\d+)$")


def lineage_run(run: RunData) -> bool:
    """Whether the run is an agent run (its evaluations name a method and a step): the runs the
    sample view is for."""
    return any(e.extra.get("method") and e.extra.get("step") for e in run.evaluations)


def figures(result: EvaluationResult) -> list[tuple[str, str]]:
    """(label, text) of the figures an evaluation has."""
    out = []
    for key, name, spec in FIGURES:
        value = getattr(result, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((name, spec.format(value)))
    return out


def _base_step(step: str) -> tuple[str, int]:
    found = _RETRY.match(step)
    return (found.group(1), int(found.group(2))) if found else (step, 0)


@dataclass
class Sample:
    """One sample of a task and series as the sample view shows it: its evaluation (``result``,
    and the agent's keys beside it in ``result.extra``: ``step``, ``sample``, ``parent``,
    ``origin``, ...), its place in the lineage tree (``depth``, ``children``: their steps), its
    failure ``category`` (None when correct), the model ``call`` that answered it (None for a
    seed), the earlier calls for the same slot that were asked again (``attempts``) and
    autocomp's planning call (``plan``). ``call``, ``attempts`` and ``plan`` are ``llm_call``
    events."""

    step: str
    result: EvaluationResult
    category: Category | None
    call: dict[str, Any] | None
    attempts: list[dict[str, Any]]
    plan: dict[str, Any] | None
    position: int  # among the task and series' evaluations, in file order
    depth: int = 0
    children: list[str] = field(default_factory=list)

    @property
    def slot(self) -> int | None:
        """The budget slot (the evaluation's ``sample`` key); None for a seed."""
        sample = self.result.extra.get("sample")
        return sample if isinstance(sample, int) else None

    @property
    def parent(self) -> str | None:
        """The step of the sample it was derived from (None, or "", for a root)."""
        return self.result.extra.get("parent")

    @property
    def seed(self) -> bool:
        return is_seed(self.result)

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def stage(self) -> str | None:
        return self.result.stage

    @property
    def message(self) -> str:
        return self.result.message or ""


def collect(run: RunData, tasks: Iterable[str] | None = None) -> dict[str, dict[str, list[Sample]]]:
    """task -> series -> its samples in lineage order (seed kernels first among the roots);
    tasks in catalogue order."""
    wanted = set(tasks) if tasks is not None else None
    calls: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for c in run.llm_calls:
        if isinstance(c.get("task"), str) and isinstance(c.get("step"), str):
            calls.setdefault((c["task"], str(c.get("method"))), {})[c["step"]] = c
    grouped: dict[str, dict[str, list[EvaluationResult]]] = {}
    for e in run.evaluations:
        if not e.extra.get("method") or not isinstance(e.extra.get("step"), str):
            continue
        if wanted is not None and e.task not in wanted:
            continue
        grouped.setdefault(e.task, {}).setdefault(series_label(e), []).append(e)
    out: dict[str, dict[str, list[Sample]]] = {}
    for task in in_catalogue_order(grouped):
        out[task] = {}
        for series in sorted(grouped[task]):
            results = grouped[task][series]
            method = str(results[0].extra.get("method"))
            out[task][series] = _tree(results, calls.get((task, method), {}))
    return out


def _tree(results: list[EvaluationResult], calls: dict[str, dict[str, Any]]) -> list[Sample]:
    """The samples of one task and series in lineage order (see :func:`collect`)."""
    by_step: dict[str, tuple[int, EvaluationResult]] = {}
    for position, e in enumerate(results):  # a resumed run may repeat a step: the last is the verdict
        by_step[e.extra["step"]] = (position, e)
    evaluated = set(by_step)
    plan_steps = {e.extra.get("plan_step") for _, e in by_step.values() if e.extra.get("plan_step")}
    # calls that were asked again (evolve's rejected proposals): by the slot's base step
    attempts: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for step, call in calls.items():
        if step in evaluated or step in plan_steps:
            continue
        base, n = _base_step(step)
        attempts.setdefault(base, []).append((n, call))
    samples = []
    for step, (position, e) in by_step.items():
        base, n = _base_step(step)
        earlier = sorted((a for a in attempts.get(base, []) if a[0] < n), key=lambda a: a[0])
        plan_step = e.extra.get("plan_step")
        samples.append(Sample(step, e, taxonomy.classify(e), calls.get(step),
                              [call for _, call in earlier],
                              calls.get(plan_step) if plan_step else None, position))
    known = {s.step: s for s in samples}
    kids: dict[str, list[Sample]] = {s.step: [] for s in samples}
    roots = []
    for s in samples:
        parent = known.get(s.parent) if s.parent else None
        if parent is not None and parent is not s:
            kids[parent.step].append(s)
        else:
            roots.append(s)

    def order(s: Sample) -> tuple[int, int, int]:
        slot = s.slot if s.slot is not None else -1  # seeds (no slot) first
        return (0 if s.seed else 1, slot, s.position)

    ordered: list[Sample] = []
    seen: set[str] = set()
    stack = [(r, 0) for r in sorted(roots, key=order, reverse=True)]
    while stack:  # depth first, iteratively: a long refinement chain is a deep tree
        s, depth = stack.pop()
        if s.step in seen:
            continue
        seen.add(s.step)
        s.depth = depth
        ordered.append(s)
        stack += [(c, depth + 1) for c in sorted(kids[s.step], key=order, reverse=True)]
    for s in samples:  # a cycle of parents (a hand-edited file): listed after the rest
        if s.step not in seen:
            ordered.append(s)
    for s in ordered:
        s.children = [c.step for c in kids[s.step]]
    return ordered


def best_steps(run: RunData) -> dict[tuple[str, str], str]:
    """(task, series) -> the step of its best evaluation (the one the task table shows)."""
    out = {}
    for row in run.best_rows():
        step = row.best.extra.get("step")
        if step:
            out[(row.task, row.series)] = step
    return out


def diff(parent: str | None, child: str | None, parent_name: str = "parent",
         child_name: str = "sample") -> str:
    """The unified diff from ``parent``'s source to ``child``'s ("" when either is missing)."""
    if parent is None or child is None:
        return ""
    return "".join(difflib.unified_diff(parent.splitlines(keepends=True), child.splitlines(keepends=True),
                                        parent_name, child_name, n=3))


def matches(sample: Sample, status: str | None, category: str | None) -> bool:
    """Whether a sample passes the filters (a status; a failure category's key or label)."""
    if status and sample.status != status:
        return False
    if category:
        got = sample.category
        if got is None or category not in (got, taxonomy.label(got)):
            return False
    return True


def _line(s: Sample, best: bool) -> str:
    """One sample in the listing: slot, step, lineage, verdict, figures, message."""
    keys = s.result.extra
    slot = "seed" if s.seed else f"#{s.slot}" if s.slot is not None else "-"
    how = [str(keys[k]) if k in ("origin", "mutation") else f"{k.replace('_', ' ')} {keys[k]}"
           for k in ("mutation", "island", "crossover_with", "reused_from") if keys.get(k) is not None]
    if not keys.get("mutation") and keys.get("origin") and not s.seed:
        how.insert(0, str(keys["origin"]))
    verdict = str(s.status)
    if s.category:
        verdict += f" ({taxonomy.label(s.category)})"
    figs = ", ".join(f"{k} {v}" for k, v in figures(s.result) if k in ("speedup", "err / tol", "compile"))
    message = s.message.splitlines()[0] if s.message else ""
    parts = [f"{'  ' * s.depth}{slot} {s.step}", ", ".join(how), verdict,
             f"stage {s.stage}" if s.stage else "", figs,
             message[:140] + ("..." if len(message) > 140 else "")]
    return " · ".join(p for p in parts if p) + ("  <- best" if best else "")


def print_samples(run: RunData, console: Any, *, task: str | None = None, status: str | None = None,
                  category: str | None = None, step: str | None = None) -> int:
    """The samples of an agent run on the terminal: per task and series, one line per sample in
    lineage order (indented under its parent), filtered by ``task``, ``status`` and failure
    ``category``; with ``step`` (and ``task``), that sample in full: its verdict, figures,
    prompt, answer, kernel and the diff from its parent. Returns the number of samples shown;
    ValueError for a category the taxonomy does not have."""
    from rich.markup import escape

    if category and category not in taxonomy.CATEGORIES and \
            category not in {taxonomy.label(c) for c in taxonomy.CATEGORIES}:
        raise ValueError(f"unknown failure category {category!r}; use one of "
                         f"{', '.join(taxonomy.CATEGORIES)}")

    found = collect(run, [task] if task else None)
    best = best_steps(run)
    shown = 0
    for task_id, by_series in found.items():
        for series, samples in by_series.items():
            if step is not None:
                for s in samples:
                    if s.step == step:
                        _print_one(run, console, task_id, series, s, samples)
                        shown += 1
                continue
            listed = [s for s in samples if matches(s, status, category)]
            if not listed:
                continue
            n = sum(not s.seed for s in samples)
            console.print(f"[bold]{escape(task_id)}[/] · {escape(series)}: {n} samples"
                          + (f", {len(listed)} shown" if len(listed) != len(samples) else ""))
            for s in listed:
                text = escape(_line(s, best.get((task_id, series)) == s.step))
                color = "green" if s.status == Status.CORRECT else "red"
                console.print(f"  [{color}]{text}[/]", soft_wrap=True)
            shown += len(listed)
    return shown


def _print_one(run: RunData, console: Any, task: str, series: str, s: Sample,
               samples: list[Sample]) -> None:
    from rich.markup import escape

    keys = s.result.extra
    console.print(f"[bold]{escape(task)} · {escape(series)} · {escape(s.step)}[/]")
    facts = [("sample", "seed" if s.seed else str(s.slot)), ("parent", s.parent or "-"),
             *((k.replace("_", " "), str(keys[k])) for k in LINEAGE if keys.get(k) is not None),
             ("children", ", ".join(s.children) or "-"),
             ("status", str(s.status)), ("stage", str(s.stage or "-")),
             ("failure", taxonomy.label(s.category) if s.category else "-"),
             *figures(s.result)]
    for key, value in facts:
        console.print(f"  {key}: {escape(value)}", soft_wrap=True)
    if s.message:
        console.print(f"  message: {escape(s.message)}", soft_wrap=True)
    source, _ = run.source(s.result)
    parent = next((p for p in samples if p.step == s.parent), None)
    parent_source = run.source(parent.result)[0] if parent is not None else None
    sections = []
    if s.plan:
        sections += [("plan prompt", s.plan.get("prompt") or ""),
                     ("plan", s.plan.get("response") or "")]
    for a in s.attempts:
        sections.append((f"asked again: {a['step']}", a.get("response") or a.get("error") or ""))
    if s.call:
        sections += [("prompt", s.call.get("prompt") or ""),
                     ("answer", s.call.get("response") or s.call.get("error") or "")]
    else:
        sections.append(("prompt", "(no model call: a shipped seed kernel)" if s.seed else
                         "(no llm_call event for this step)"))
    sections.append(("kernel", source if source is not None else "(source not kept)"))
    if s.parent:
        sections.append((f"diff from {s.parent}", diff(parent_source, source, s.parent, s.step)
                         or "(identical, or a source is missing)"))
    for title, text in sections:
        console.print(f"[bold]--- {escape(title)} ---[/]")
        console.print(escape(text), soft_wrap=True, markup=False, highlight=False)


__all__ = ["FIGURES", "Sample", "best_steps", "collect", "diff", "figures", "lineage_run", "matches",
           "print_samples"]
