"""Drives one method over a list of tasks into a run directory, resuming what is there."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jaxbench.agents.base import METHODS, Budget, Candidate, Context, Journal, Method
from jaxbench.backends import resolve_mode
from jaxbench.evaluator import Evaluator
from jaxbench.llm import ModelClient, Sampling
from jaxbench.runs import RunDir
from jaxbench.tasks import get_task

DEFAULT_BUDGET = 144


def get_method(name: str, **options: Any) -> Method:
    """The registered method ``name`` configured with ``options`` (one-line ValueError otherwise)."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; use one of {', '.join(sorted(METHODS))}")
    return METHODS[name](**options)


def optimize(
    task_ids: Sequence[str],
    method: Method,
    model: ModelClient,
    run: RunDir,
    *,
    budget: int = DEFAULT_BUDGET,
    target: str = "tpu",
    size: str = "small",
    mode: str = "auto",
    trials: int = 3,
    docs: bool = False,
    workers: int = 4,
    sampling: Sampling | None = None,
    on_candidate: Callable[[Candidate], None] | None = None,
    evaluator: Evaluator | None = None,
) -> dict[str, list[Candidate]]:
    """Spends up to ``budget`` samples per task with ``method``; returns each task's candidates.

    Every LLM call and evaluation is an event of ``run``; a task whose ``task_done``
    event exists is not run again, and an unfinished one replays its finished steps.
    ``evaluator`` defaults to a new one keyed by the run's secret.
    """
    if budget < 1:
        raise ValueError("the budget must be at least 1 sample per task")
    tasks = [get_task(t) for t in task_ids]
    mode = resolve_mode(mode, target)
    journal = Journal(run.events())
    # One accelerator times one kernel at a time; interpret checks may overlap.
    eval_slots = threading.Semaphore(1 if mode == "device" else workers)
    results: dict[str, list[Candidate]] = {}
    with contextlib.ExitStack() as stack:
        if evaluator is None:
            evaluator = stack.enter_context(Evaluator(secret=run.secret, spares=min(workers, 2)))
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=workers))
        for task in tasks:
            if (task.id, method.name) in journal.done:
                results[task.id] = _recorded(journal, task.id, method.name, on_candidate)
                continue
            ctx = Context(task=task, method=method.name, target=target, mode=mode, size=size,
                          trials=trials, docs=docs, model=model, evaluator=evaluator, run=run,
                          budget=Budget(budget), pool=pool, journal=journal, eval_slots=eval_slots,
                          sampling=sampling, on_candidate=on_candidate)
            method.run(ctx)
            assert ctx.budget.used <= budget
            best = max(ctx.candidates, key=lambda c: c.fitness(), default=None)
            run.append({"type": "task_done", "task": task.id, "method": method.name,
                        "samples": ctx.budget.used,
                        "best_status": best.status if best else None,
                        "best_speedup": best.speedup if best else None,
                        "best_step": best.step if best else None})
            results[task.id] = ctx.candidates
    return results


def _recorded(journal: Journal, task_id: str, method: str,
              on_candidate: Callable[[Candidate], None] | None) -> list[Candidate]:
    """A finished task's candidates, rebuilt from its evaluation events."""
    candidates = []
    for (task, name, step), event in journal.evaluations.items():
        if task == task_id and name == method:
            candidate = Candidate(step, event.get("sample"), event.get("source", ""), event,
                                  event.get("parent"))
            candidates.append(candidate)
            if on_candidate is not None:
                on_candidate(candidate)
    return candidates
