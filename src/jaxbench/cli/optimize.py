"""``jaxbench optimize``: run an optimizing method with a model over tasks into a run directory."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from jaxbench.cli.common import (
    MODE,
    SIZE,
    TARGET,
    error_text,
    executor_options,
    load_task_files,
    sealed_command,
    task_file_option,
)
from jaxbench.contract import Status

DEFAULT_CACHE = Path(os.environ.get("JAXBENCH_CACHE", Path.home() / ".cache" / "jaxbench")) / "llm"


def _parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--option {pair!r} is not KEY=VALUE")
        options[key.strip().replace("-", "_")] = value.strip()
    return options


def _parse_price(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        cost_in, cost_out = (float(x) for x in text.split(","))
        if cost_in < 0 or cost_out < 0:
            raise ValueError
    except ValueError:
        raise ValueError(f"--price {text!r} is not IN,OUT (dollars per million input and output "
                         "tokens, e.g. --price 1.25,10)") from None
    return (cost_in, cost_out)


@click.command("optimize")
@click.option("--method", "method_name", required=True,
              help="best_of_n, iterative, autocomp or evolve.")
@click.option("--model", "model_spec", required=True,
              help="PROVIDER:MODEL, e.g. gemini:gemini-2.5-pro, openai:gpt-5, "
                   "openai:NAME@http://host:8000/v1, anthropic:claude-sonnet-4-5, scripted:DIR, "
                   "replay:FILE.")
@click.option("--suite", default=None, help="Every task of a suite.")
@click.option("--tasks", "task_ids", default=None, help="Comma-separated task IDs.")
@click.option("--budget", type=click.IntRange(1), default=144, show_default=True,
              help="Candidate kernels evaluated per task (never exceeded).")
@click.option("--docs", is_flag=True, help="Add the documentation block to every prompt.")
@click.option("--prompt", "prompt_mode", type=click.Choice(["default", "paper"]), default="default",
              show_default=True,
              help="default: this harness's prompts (with the roofline profile and its hint); "
                   "paper: the JAXBench paper's arms, the task alone (no profile, hint or "
                   "advice), with --docs the only difference (docs/agents.md, \"Prompts\").")
@click.option("--target", type=TARGET, default="tpu", show_default=True)
@click.option("--size", type=SIZE, default="small", show_default=True)
@click.option("--mode", type=MODE, default="auto", show_default=True)
@click.option("--trials", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run directory; an unfinished one with the same settings is resumed.")
@click.option("--record", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append every model exchange to this JSONL file (play back with replay:FILE).")
@click.option("-O", "--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Method option, e.g. -O chains=8, -O beam_width=4 (repeatable).")
@click.option("--workers", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Samples in flight at once (model calls and evaluations overlap).")
@click.option("--parallel-tasks", type=click.IntRange(0, 64), default=0, show_default=True,
              help="Tasks optimized at once (0: all, at most 64); model calls and evaluations "
                   "stay within --concurrency and --workers.")
@click.option("--temperature", type=float, default=None,
              help="Sampling temperature (default: the provider's).")
@click.option("--max-tokens", type=click.IntRange(256), default=16384, show_default=True)
@click.option("--seed", type=click.IntRange(0), default=None,
              help="Seed the method's random choices and, for providers that accept one "
                   "(OpenAI-compatible, Gemini), each call (recorded in the run).")
@click.option("--reasoning-effort", type=click.Choice(["minimal", "low", "medium", "high", "xhigh",
                                                       "max"]), default=None,
              help="Reasoning effort: OpenAI reasoning_effort, Anthropic output_config.effort, "
                   "Gemini thinking_level.")
@click.option("--thinking-budget", type=click.IntRange(0), default=None,
              help="Thinking tokens: Anthropic extended thinking budget_tokens, Gemini "
                   "thinking_budget.")
@click.option("--price", "price_text", default=None, metavar="IN,OUT",
              help="Dollars per million input and output tokens, instead of the price table.")
@click.option("--concurrency", type=click.IntRange(1, 256), default=8, show_default=True,
              help="Model calls in flight at once.")
@click.option("--llm-timeout", type=float, default=600.0, show_default=True,
              help="Seconds per model call.")
@click.option("--no-cache", is_flag=True,
              help=f"Do not use the response cache ({DEFAULT_CACHE}) nor the judge's compile "
                   "cache of the task's programs (`jaxbench doctor` names its directory).")
@task_file_option
@executor_options
@sealed_command
def optimize_cmd(method_name: str, model_spec: str, suite: str | None, task_ids: str | None,
                 budget: int, docs: bool, prompt_mode: str, target: str, size: str, mode: str,
                 trials: int,
                 out_dir: Path, record: Path | None, options: tuple[str, ...], workers: int,
                 parallel_tasks: int, temperature: float | None, max_tokens: int,
                 seed: int | None,
                 reasoning_effort: str | None, thinking_budget: int | None, price_text: str | None,
                 concurrency: int, llm_timeout: float, no_cache: bool, executor: str,
                 ray_address: str | None, task_files: tuple[Path, ...] = ()) -> None:
    """Optimize kernels with an LLM under a sample budget per task.

    One method spends up to --budget candidate kernels per task; every candidate is judged
    and kept in the run directory."""
    from jaxbench.evaluator import Settings
    from jaxbench.llm import Sampling
    from jaxbench.runs import RunDir, RunError

    if suite and task_ids or not (suite or task_ids or task_files):
        raise click.UsageError("give exactly one of --suite and --tasks, or --task-file")
    own = load_task_files(task_files, executor)
    sampling = Sampling(temperature=temperature, max_tokens=max_tokens,
                        reasoning_effort=reasoning_effort, thinking_budget=thinking_budget,
                        seed=seed)
    tasks, method, model, price_override = _prepare(
        suite, task_ids, own, method_name, options, model_spec, sampling, llm_timeout,
        concurrency, no_cache, record, price_text)
    settings = Settings.of(target=target, size=size, mode=mode, trials=trials,
                           xla_cache=not no_cache)
    _check_mode(settings, executor, ray_address)
    config = {"command": "optimize", "method": method.name, "options": method.options,
              "seeded": method.seeded, "model": model_spec, "tasks": tasks, "budget": budget,
              "docs": docs, "prompt": prompt_mode, "target": target, "size": size, "mode": mode,
              "trials": trials,
              "sampling": sampling.as_dict(), "price_override": price_override,
              **({"task_files": [list(entry) for entry in own]} if own else {})}
    resuming = (out_dir / "manifest.json").exists()  # RunDir.open resumes it (or refuses)
    try:
        run = RunDir.open(out_dir, config)
    except RunError as exc:
        raise click.UsageError(str(exc)) from None
    if resuming:
        click.echo(resuming_line(out_dir, list(run.events()), len(tasks), budget), err=True)
    _optimize_with_progress(run, out_dir, tasks, method, model, settings, budget=budget,
                            docs=docs, prompt=prompt_mode, workers=workers,
                            parallel_tasks=parallel_tasks or None, executor=executor,
                            ray_address=ray_address)


def resuming_line(out_dir: Path, events: list[dict[str, Any]], tasks: int, budget: int) -> str:
    """What a resumed optimize run says first: that it resumes, and what it reuses (finished
    samples and model calls; a cancelled call is asked again)."""
    samples = sum(1 for e in events if e.get("type") == "evaluation" and e.get("sample") is not None)
    calls = sum(1 for e in events if e.get("type") == "llm_call" and not e.get("cancelled"))
    done = len({(e.get("task"), e.get("method")) for e in events if e.get("type") == "task_done"})
    return (f"jaxbench: resuming {out_dir}: {samples} of up to {budget * tasks} samples, {calls} "
            f"model call{'s' if calls != 1 else ''} and {done} of {tasks} finished "
            f"task{'s' if tasks != 1 else ''} are reused from it")


def _prepare(suite: str | None, task_ids: str | None, own: list[tuple[str, str, str]],
             method_name: str, options: tuple[str, ...], model_spec: str, sampling: Any,
             llm_timeout: float, concurrency: int, no_cache: bool, record: Path | None,
             price_text: str | None) -> tuple[list[str], Any, Any, Any]:
    """The run's tasks, method and model (and the price override); usage errors otherwise."""
    from jaxbench.agents import get_method
    from jaxbench.llm import LLMConfigError, get_model
    from jaxbench.runs import select_tasks
    from jaxbench.tasks import UnknownTaskError

    try:
        tasks = [t.id for t in select_tasks(suite, task_ids) or []]
        tasks += [entry[0] for entry in own if entry[0] not in tasks]
        method = get_method(method_name, **_parse_options(options))
        price_override = _parse_price(price_text)
        model = get_model(model_spec, sampling=sampling, timeout_s=llm_timeout,
                          max_concurrency=concurrency,
                          cache_dir=None if no_cache else DEFAULT_CACHE, record=record,
                          price_override=price_override)
    except (UnknownTaskError, ValueError, LLMConfigError) as exc:
        raise click.UsageError(error_text(exc)) from None
    if not tasks:
        raise click.UsageError("no tasks selected")
    return tasks, method, model, price_override


def _check_mode(settings: Any, executor: str, ray_address: str | None) -> None:
    """A mode nothing here (or on the Ray cluster) can run is a usage error."""
    from jaxbench.backends import resolve_mode
    from jaxbench.executors import ExecutorError, check_executor

    try:  # model calls stay here; with --executor ray the cluster evaluates (and sets the mode)
        if check_executor(executor, ray_address, settings.mode, [settings.target]) is None:
            if settings.mode != "interpret":  # the evaluator here: its chip opened once
                from jaxbench.evaluator import probe_by_first_owner

                probe_by_first_owner()
            resolve_mode(settings.mode, settings.target)
    except (RuntimeError, ExecutorError) as exc:  # --mode device without the hardware
        raise click.UsageError(str(exc)) from None


def _optimize_with_progress(run: Any, out_dir: Path, tasks: list[str], method: Any, model: Any,
                            settings: Any, *, budget: int, executor: str, ray_address: str | None,
                            **optimize_options: Any) -> None:
    """Runs the method with progress on stderr (a live bar on a terminal; in a log a line per
    finished sample and a heartbeat while none finishes, as ``run`` does) and Ctrl-C handling,
    then ends the run: its best kernels written, its summary printed."""
    from jaxbench.cli.terminal import JobProgress, StopSignals
    from jaxbench.cli.terminal import console as make_console
    from jaxbench.report import print_summary, summarize
    from jaxbench.runs import write_best

    console = make_console(stderr=True)
    progress = JobProgress(budget * len(tasks), f"{method!r} on {len(tasks)} task(s)",
                           failed_word="not correct", unit="samples at most")
    message = (f"jaxbench: stopping: no model request starts any more; calls and evaluations in "
               f"flight are cancelled; finished samples stay in {out_dir} (press Ctrl-C again to "
               "exit at once)")
    # Ctrl-C or SIGTERM: the model is cancelled at the signal (no request starts after it), the
    # driver closes the run's events and kills the evaluations in flight, and this exits 130.
    with StopSignals(on_stop=model.cancel, grace_s=10, message=message) as stop:
        with progress:
            def on_candidate(candidate) -> None:  # noqa: ANN001
                if candidate.sample is not None:
                    speed = f" {candidate.speedup:.2f}x" if candidate.speedup else ""
                    progress.advance(f"{candidate.result.task} sample {candidate.sample} "
                                     f"{candidate.status}{speed}",
                                     failed=candidate.status != Status.CORRECT)

            interrupted = _run_method(run, tasks, method, model, settings, console, stop,
                                      budget=budget, executor=executor, ray_address=ray_address,
                                      on_candidate=on_candidate, **optimize_options)
        if interrupted or stop.is_set():
            _stopped(run, out_dir, tasks, budget, stop)
    write_best(out_dir)  # best/<task>.py: each task's best correct kernel
    run.finish()
    print_summary(summarize(out_dir), make_console())
    click.echo(f"run directory: {out_dir}")


def _run_method(run: Any, tasks: list[str], method: Any, model: Any, settings: Any, console: Any,
                stop: Any, *, executor: str, ray_address: str | None,
                **optimize_options: Any) -> bool:
    """:func:`jaxbench.agents.optimize` on the executor's evaluator; True when it was
    interrupted. A model that fails for good, or an evaluation a Ray node lost, exits 1."""
    from jaxbench.agents import Interrupted, optimize
    from jaxbench.executors import EvaluationLost, make_evaluator
    from jaxbench.llm import LLMConfigError, LLMError

    try:
        evaluator = make_evaluator("ray", run.secret, ray_address=ray_address) \
            if executor == "ray" else None  # None: optimize makes a local one
        optimize(tasks, method, model, run, settings=settings, evaluator=evaluator,
                 interrupt=stop.event, **optimize_options)
    except Interrupted:
        return True
    except (LLMError, LLMConfigError) as exc:
        if stop.is_set():
            return True
        console.print(f"jaxbench: model call failed: {exc}; rerun the same command "
                      "to resume", markup=False)
        run.interrupt(failed="model")  # the segment ends: its secret is revealed
        sys.exit(1)
    except EvaluationLost as exc:  # a Ray node died on every retry: no verdict to record
        console.print(f"jaxbench: {exc}; rerun the same command to resume", markup=False)
        run.interrupt(failed="evaluation_lost")
        sys.exit(1)
    return False


def _stopped(run, out_dir: Path, tasks: list[str], budget: int, stop) -> None:  # noqa: ANN001
    """After Ctrl-C: a ``run_end`` that says the run was interrupted (revealing nothing, so it
    resumes), what is kept, the command that resumes, and exit 130 (143 for SIGTERM)."""
    import signal

    from jaxbench.cli.common import resume_command

    events = list(run.events())
    samples = sum(1 for e in events if e.get("type") == "evaluation" and e.get("sample") is not None)
    done = sum(1 for e in events if e.get("type") == "task_done")
    cancelled = sum(1 for e in events if e.get("type") == "llm_call" and e.get("cancelled"))
    name = signal.Signals(stop.signum).name if stop.signum else "a signal"
    command = resume_command(out_dir)
    run.interrupt(signal=name, samples=samples, tasks_done=done, resume=command,
                  stopped_in_s=round(time.monotonic() - (stop.stopped_at or time.monotonic()), 3))
    cut = f"; {cancelled} model call{'s' if cancelled != 1 else ''} in flight cancelled" \
        if cancelled else ""
    click.echo(f"jaxbench: interrupted by {name}: {samples} of up to {budget * len(tasks)} "
               f"samples are done ({done} of {len(tasks)} tasks finished) and kept in "
               f"{out_dir}{cut}; resume with:\n  {command}", err=True)
    stop.exit()
