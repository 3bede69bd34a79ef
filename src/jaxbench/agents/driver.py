"""Drives one method over a list of tasks into a run directory, resuming what is there.

Tasks run concurrently, each in its own thread; their samples (a model call, then an
evaluation) share one thread pool. What bounds the work in flight is the model client's
limit on concurrent calls and the evaluator's slots (``workers``; on a device the chip's
one owner does one kernel's device work at a time, see :class:`~jaxbench.evaluator.parent.
judge_client.ChipOwners`), so
a suite of tasks is limited by the provider's rate and the evaluator, not by each task's
rounds: while one task waits for the last sample of its round, the others fill the
pipeline.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxbench.agents.base import METHODS, Budget, Candidate, Context, Journal, Method
from jaxbench.backends import device_kind, resolve_mode
from jaxbench.contract import Settings, Stage
from jaxbench.evaluator import Evaluator
from jaxbench.executors import SupportsEvaluate, evaluate_with
from jaxbench.llm import ModelClient, Sampling
from jaxbench.runs import RunDir, event_source
from jaxbench.tasks import Task, get_task

DEFAULT_BUDGET = 144
MAX_PARALLEL_TASKS = 64
# On a device the winner is timed again with more repetitions (5x the evaluator's minimum
# and device-trace repetitions, a longer budget); both figures are kept.
RETIME_TIMING = {"min_reps": 50, "max_reps": 1000, "budget_s": 20.0, "device_reps": 100}


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
    settings: Settings | None = None,
    budget: int = DEFAULT_BUDGET,
    docs: bool = False,
    prompt: str | None = None,
    workers: int = 4,
    parallel_tasks: int | None = None,
    sampling: Sampling | None = None,
    on_candidate: Callable[[Candidate], None] | None = None,
    evaluator: SupportsEvaluate | None = None,
    ir_feedback: bool = True,
    interrupt: threading.Event | None = None,
    target: str = "tpu",
    size: str = "small",
    mode: str = "auto",
    trials: int = 3,
) -> dict[str, list[Candidate]]:
    """Spends up to ``budget`` samples per task with ``method``; returns each task's candidates.

    ``settings`` are the evaluations' (:class:`~jaxbench.contract.Settings`:
    its target, default tpu, and its mode, resolved here; ``jaxbench optimize`` builds them);
    without it, ``target``, ``size``, ``mode`` and ``trials`` make them, the other fields at
    their defaults. Every LLM call and evaluation is an event of ``run``; a task whose
    ``task_done`` event exists is not run again, and an unfinished one replays its finished
    steps. ``workers`` evaluations run at once (on a device, timed one at a time); up to
    ``parallel_tasks`` tasks (default: all, at most 64) run at once. ``evaluator`` defaults
    to a new one keyed by the run's secret. ``prompt`` is the prompt mode ("default" or
    "paper", ``--prompt``; None: the run's config says, else "default").

    ``interrupt`` (Ctrl-C: ``StopSignals.event``) stops the run within a fraction of a
    second once set: no task or model request starts any more (the caller should also
    cancel the model at the signal, :meth:`ModelClient.cancel`), the model calls in flight
    are recorded as cancelled ``llm_call`` events and abandoned, the evaluations in flight
    are killed and not recorded, the finished samples stay in the run, and
    :class:`Interrupted` is raised without waiting for any thread (the caller exits).
    """
    if budget < 1:
        raise ValueError("the budget must be at least 1 sample per task")
    if settings is None:
        settings = Settings.of(target=target, size=size, mode=mode, trials=trials)
    tasks = [get_task(t) for t in task_ids]
    # A Ray evaluator (jaxbench.executors.ray) resolves the mode on its cluster, not this host.
    cluster: Any = evaluator if hasattr(evaluator, "slots") else None
    settings, kind = _resolved(settings, cluster)
    journal = Journal(run.events())
    results: dict[str, list[Candidate]] = {}
    todo = []
    for task in tasks:
        if (task.id, method.name) in journal.done:
            results[task.id] = _recorded(journal, run.path, task.id, method.name, on_candidate)
        else:
            todo.append(task)
    if todo:
        # Evaluations overlap (tracing, compiling, checking); on a device the evaluator's lease
        # lets one kernel at a time be timed, never while another compiles.
        slots = cluster.slots(settings.mode, settings.target) if cluster else workers
        shared = _Shared(method=method, model=model, run=run, settings=settings, budget=budget,
                         docs=docs, prompt=prompt, sampling=sampling, on_candidate=on_candidate,
                         ir_feedback=ir_feedback, device_kind=kind, journal=journal,
                         eval_slots=threading.Semaphore(slots))
        results.update(_run_tasks(shared, todo, workers, parallel_tasks, evaluator, interrupt))
    return {t.id: results[t.id] for t in tasks}


def _resolved(settings: Settings, cluster: Any) -> tuple[Settings, str | None]:
    """The run's settings with their target (tpu by default) and mode resolved, here or on the
    Ray cluster, and fresh trial keys per evaluation (``fresh_keys``); and the device kind
    the kernels are timed on (None in interpret mode)."""
    target = settings.target or "tpu"
    mode = cluster.resolve_mode(settings.mode, target) if cluster else resolve_mode(settings.mode,
                                                                                    target)
    kind = (cluster.device_kind(target) if cluster else device_kind()) if mode == "device" else None
    # Fresh trial keys for every evaluation: a model reads each verdict before its next
    # candidate, so nothing it learns of one evaluation's inputs may apply to the next.
    return settings.replace(target=target, mode=mode, fresh_keys=True), kind


@dataclass
class _Shared:
    """What every task of one :func:`optimize` call shares."""

    method: Method
    model: ModelClient
    run: RunDir
    settings: Settings
    budget: int
    docs: bool
    prompt: str | None
    sampling: Sampling | None
    on_candidate: Callable[[Candidate], None] | None
    ir_feedback: bool
    device_kind: str | None
    journal: Journal
    eval_slots: threading.Semaphore
    stop: threading.Event = field(default_factory=threading.Event)


def _run_tasks(shared: _Shared, todo: list[Task], workers: int, parallel_tasks: int | None,
               evaluator: SupportsEvaluate | None,
               interrupt: threading.Event | None) -> dict[str, list[Candidate]]:
    """Runs the unfinished tasks, each in a thread, their samples in one shared pool."""
    in_flight = max(1, min(parallel_tasks or len(todo), len(todo), MAX_PARALLEL_TASKS))
    calls = getattr(shared.model, "max_concurrency", workers)
    interrupted = False
    with contextlib.ExitStack() as stack:
        if evaluator is None:
            evaluator = stack.enter_context(Evaluator(secret=shared.run.secret,
                                                      spares=min(workers, 2)))
        # Samples block on the model's and the evaluator's limits, not on the pool. The pools
        # are shut down by hand: after a stop, nothing waits for their threads.
        pool = ThreadPoolExecutor(max_workers=calls + workers, thread_name_prefix="jaxbench-sample")
        runners = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="jaxbench-task")
        stack.callback(lambda: [p.shutdown(wait=not interrupted, cancel_futures=interrupted)
                                for p in (runners, pool)])
        futures = {runners.submit(_run_task, shared, task, evaluator, pool, interrupt): task
                   for task in todo}
        pending: set[Any] = set(futures)
        failed: list[Any] = []
        while pending and not failed:
            done, pending = wait(pending, timeout=None if interrupt is None else 0.05,
                                 return_when=FIRST_EXCEPTION)
            if interrupt is not None and interrupt.is_set():
                interrupted = True
                _halt(shared.stop, shared.journal, shared.run, shared.model, evaluator, interrupt)
                raise Interrupted(_why(interrupt))
            failed = [f for f in done if f.exception() is not None]
        if failed:
            shared.stop.set()  # running tasks end at their next round, without a task_done event
            for future in pending:
                future.cancel()  # tasks not started yet stay for the resume
            wait(pending)
            raise failed[0].exception()  # type: ignore[misc]
        return {task.id: future.result() for future, task in futures.items()}


def _run_task(shared: _Shared, task: Task, evaluator: SupportsEvaluate, pool: ThreadPoolExecutor,
              interrupt: threading.Event | None) -> list[Candidate]:
    """One task: the method's samples, then (on a device) its winner timed again, then its
    ``task_done`` event."""
    stop, method = shared.stop, shared.method
    if stop.is_set() or (interrupt is not None and interrupt.is_set()):
        raise _Stopped  # stopped before this task began: it starts on the resume
    ctx = Context(task=task, method=method.name, settings=shared.settings, docs=shared.docs,
                  model=shared.model, evaluator=evaluator, run=shared.run,
                  budget=Budget(shared.budget, stop), pool=pool, journal=shared.journal,
                  eval_slots=shared.eval_slots, sampling=shared.sampling,
                  on_candidate=shared.on_candidate, device_kind=shared.device_kind,
                  ir_feedback=shared.ir_feedback, prompt_mode=shared.prompt)
    method.run(ctx)
    if stop.is_set():
        raise _Stopped  # another task failed: this one is unfinished, resume continues it
    assert ctx.budget.used <= shared.budget
    best = max(ctx.candidates, key=lambda c: c.fitness(), default=None)
    retimed = _retime(ctx, best) if ctx.mode == "device" else None
    shared.journal.append(shared.run, {
        "type": "task_done", "task": task.id, "method": method.name,
        "samples": ctx.budget.used, "seeded": method.seeded, "planning_calls": ctx.planning_calls,
        "best_status": best.status if best else None,
        "best_speedup": best.speedup if best else None,
        "best_step": best.step if best else None,
        **({"best_speedup_retimed": retimed.get("speedup")} if retimed else {}),
        **method.summary(ctx)})
    return ctx.candidates


def _retime(ctx: Context, best: Candidate | None) -> dict[str, Any] | None:
    """On a device: the task's winner evaluated again with :data:`RETIME_TIMING`, recorded as
    a ``retime`` event beside the search's own figure (the search's evaluation stays as it
    was). None when there is no timed correct winner."""
    if best is None or not best.correct or best.speedup is None:
        return None
    with ctx.eval_slots:
        result = evaluate_with(ctx.evaluator, best.code, ctx.task.id,
                               ctx.settings.replace(timing=RETIME_TIMING))
    time_stage = result.stages.get(Stage.TIME) or {}
    event = {"type": "retime", "task": ctx.task.id, "method": ctx.method, "step": best.step,
             "status": result.status, "message": result.message or "",
             "timing": RETIME_TIMING, "search_speedup": best.speedup,
             "speedup": result.speedup, "t_ref_ms": result.t_ref_ms,
             "t_kernel_ms": result.t_kernel_ms, "timing_method": result.timing_method,
             "roofline_fraction": result.roofline_fraction,
             "reps": time_stage.get("reps"), "spread": time_stage.get("spread")}
    ctx.journal.append(ctx.run, event)
    return event


class _Stopped(Exception):
    """A task cut short because another one failed."""


class Interrupted(Exception):
    """The run was stopped by ``interrupt`` (Ctrl-C); what finished is in the run directory
    and a rerun of the same command resumes it."""


def _why(interrupt: Any) -> str:
    import signal

    signum = getattr(interrupt, "signum", None)
    name = signal.Signals(signum).name if signum else "a stop"
    return f"cancelled: the run was stopped by {name}"


def _halt(stop: threading.Event, journal: Journal, run: RunDir, model: Any, evaluator: Any,
          interrupt: Any) -> None:
    """The stop, in this order: no budget slot, task or model request any more; the calls in
    flight recorded as cancelled and the run's events closed (so that nothing finishing
    after this, an evaluation killed next in particular, is kept); then the evaluations in
    flight killed."""
    stop.set()
    cancel = getattr(model, "cancel", None)
    if callable(cancel):
        cancel()
    journal.close(run, _why(interrupt), getattr(model, "in_flight", None))
    abort = getattr(evaluator, "abort", None)
    if callable(abort):
        abort()


def _recorded(journal: Journal, path: Path, task_id: str, method: str,
              on_candidate: Callable[[Candidate], None] | None) -> list[Candidate]:
    """A finished task's candidates, rebuilt from its evaluation events."""
    candidates = []
    for (task, name, step), result in journal.evaluations.items():
        if task == task_id and name == method:
            candidate = Candidate(step, result.extra.get("sample"),
                                  event_source(path, dict(result.extra)) or "", result,
                                  result.extra.get("parent"))
            candidates.append(candidate)
            if on_candidate is not None:
                on_candidate(candidate)
    return candidates
