"""``jaxbench run``: shipped kernels or a directory of kernels into a run directory, with a
progress bar, Ctrl-C handling that keeps finished results, and a summary table."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from jaxbench.cli.common import (
    MODE,
    SIZE,
    USAGE_ERRORS,
    check_cost,
    executor_options,
    load_task_files,
    resume_command,
    sealed_command,
    task_file_option,
    timing_option,
    usage_error_from,
)
from jaxbench.cli.terminal import JobProgress, StopSignals, usage_error
from jaxbench.cli.terminal import console as make_console

if TYPE_CHECKING:
    from jaxbench.contract import EvaluationResult

# The kinds of kernels shipped beside the tasks (jaxbench.runs.jobs.shipped_jobs).
SHIPPED_KINDS = ("seed", "seed_mosaic", "seed_mosaic_legacy", "expert")


@click.command("run")
@click.option("--suite", default=None, help="Suite to run (default: all tasks).")
@click.option("--tasks", "task_ids", default=None, help="Comma-separated task IDs.")
@click.option("--kernels", required=True,
              help="seed, seed_mosaic (Mosaic GPU seeds, plgpu.kernel), seed_mosaic_legacy "
                   "(Mosaic GPU through pl.pallas_call, JAX 0.10 only), expert, or a directory "
                   "of <task_id>.py kernel files.")
@click.option("--target", type=click.Choice(["tpu", "gpu", "all"]), default="all",
              show_default=True)
@click.option("--mode", type=MODE, default="auto", show_default=True)
@click.option("--size", type=SIZE, default="small", show_default=True)
@click.option("--trials", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option("--chip", default=None,
              help="The chip to judge for, with --target tpu or gpu (e.g. A100, H200, v5e); "
                   "default: each suite's (PallasBench GPU: A100; else H200 / v6e).")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Parallel evaluations (default: min(4, CPUs); with --executor ray, as many as "
                   "the cluster runs at once).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Per evaluation phase, seconds (default: from the task's measured seed time).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default runs/<time>-<kernels>); an existing one is resumed.")
@click.option("--save-ir", is_flag=True,
              help="Store each evaluation's IR and analyses under <run>/artifacts/.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON lines.")
@click.option("--no-cache", is_flag=True,
              help="Do not use the judge's compile cache of the task's programs (reference, "
                   "truth, inputs; `jaxbench doctor` names its directory): compile them afresh.")
@click.option("--force", is_flag=True,
              help="Run even when the interpret-mode cost estimate says evaluations cannot finish.")
@click.option("--replay", "replay_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, metavar="DIR",
              help="Draw the same inputs as the ended run DIR (one segment), from the secret it "
                   "revealed: to compare timing methods, hardware or versions on identical inputs. "
                   "Those inputs were public, so the verdicts are not hardened against a kernel "
                   "that knows them.")
@timing_option
@task_file_option
@executor_options
@sealed_command
def run_cmd(suite: str | None, task_ids: str | None, kernels: str, target: str, mode: str,
            size: str, trials: int, chip: str | None, workers: int | None, timeout_s: float | None,
            out_dir: Path | None, save_ir: bool, as_json: bool, no_cache: bool, executor: str,
            ray_address: str | None, force: bool, replay_dir: Path | None = None,
            task_files: tuple[Path, ...] = (), timing: dict[str, float] | None = None) -> None:
    """Evaluate shipped kernels or a directory of kernels into a run.

    Shipped: --kernels seed, seed_mosaic, seed_mosaic_legacy or expert; else a directory of
    <task_id>.py files."""
    if kernels not in SHIPPED_KINDS and not Path(kernels).is_dir():
        usage_error(f"--kernels must be seed, seed_mosaic, seed_mosaic_legacy, expert or a "
                    f"directory; {kernels!r} is none")  # before anything imports JAX
    if chip and target == "all":
        usage_error("--chip names one target's chip: add --target tpu or --target gpu")
    from jaxbench.evaluator import Settings
    from jaxbench.runs import Replay, RunDir, RunError, default_workers

    try:
        replay = Replay.of(replay_dir) if replay_dir is not None else None
    except RunError as exc:
        usage_error(str(exc))
    own = load_task_files(task_files, executor)  # the task files' tasks, by ID
    jobs, chip = _plan(suite, task_ids, kernels, target, chip, own)
    out_dir = out_dir or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{Path(kernels).name}"
    settings = Settings.of(mode=mode, size=size, trials=trials, timeout_s=timeout_s, chip=chip,
                           save_ir=str(out_dir / "artifacts") if save_ir else None,
                           xla_cache=not no_cache, timing=timing or {})
    _check_cluster_and_cost(jobs, settings, executor, ray_address, force)
    workers = workers or (0 if executor == "ray" else default_workers())  # 0: the cluster's slots
    config = {"command": "run", "kernels": kernels, "suite": suite, "tasks": task_ids,
              "target": target, "mode": mode, "size": size, "trials": trials,
              **({"chip": chip} if chip else {}), **({"timing": timing} if timing else {}),
              **({"task_files": [list(entry) for entry in own]} if own else {})}
    resuming = (out_dir / "manifest.json").exists()  # RunDir.open resumes it (or refuses)
    try:
        run = RunDir.open(out_dir, config, plan=[job.key for job in jobs], replay=replay)
    except RunError as exc:
        usage_error(str(exc))
    started = time.monotonic()
    results, stop = _run_with_progress(jobs, run, settings, workers, as_json, executor,
                                       ray_address, resuming)
    _finish(run, jobs, results, stop, time.monotonic() - started, as_json)


def _plan(suite: str | None, task_ids: str | None, kernels: str, target: str, chip: str | None,
          own: list[tuple[str, str, str]]) -> tuple[list[Any], str | None]:
    """The run's jobs and its chip (resolved to its device kind); usage errors for a selection
    that names nothing to run, with the files of a directory left out said on stderr."""
    from jaxbench.runs import kernel_unavailable, plan_jobs, select_tasks

    targets = ("tpu", "gpu") if target == "all" else (target,)
    skipped: list[str] = []
    try:
        if chip:
            from jaxbench.backends import resolve_chip

            chip = resolve_chip(chip, target).device_kind
        tasks = select_tasks(suite, task_ids)
        if own:  # the task files' tasks, beside --tasks / --suite or alone
            from jaxbench.tasks import get_task

            tasks = [*(tasks or []), *(get_task(entry[0]) for entry in own)]
        if kernels == "seed_mosaic_legacy" and kernel_unavailable(kernels):
            import jax

            usage_error(f"the legacy Mosaic GPU seeds are pl.pallas_call kernels, which JAX "
                        f"{jax.__version__} no longer lowers with Mosaic GPU params (JAX 0.10 "
                        "does); use --kernels seed_mosaic (plgpu.kernel) here")
        jobs = plan_jobs(kernels, tasks, targets, skipped)
    except USAGE_ERRORS as exc:
        usage_error_from(exc)
    if not jobs:
        why = f": skipped {'; '.join(skipped)}" if skipped else "; see `jaxbench tasks`"
        usage_error(f"no {kernels} kernels match (target {target}){why}")
    for note in skipped:
        click.echo(f"jaxbench: skipping {note}", err=True)
    return jobs, chip


def _check_cluster_and_cost(jobs: list[Any], settings: Any, executor: str,
                            ray_address: str | None, force: bool) -> None:
    """Usage errors before the run directory exists: a cluster that cannot run the jobs, and
    (unless ``force``) interpret-mode jobs the cost estimate says cannot finish."""
    from jaxbench.executors import ExecutorError, check_executor

    try:
        cluster_modes = check_executor(executor, ray_address, settings.mode,
                                       {job.target for job in jobs})
    except ExecutorError as exc:
        usage_error(str(exc))
    if cluster_modes is not None:  # modes resolved on the Ray cluster: estimate interpret jobs only
        jobs_costed = [j for j in jobs if cluster_modes[j.target] == "interpret"]
    else:
        jobs_costed = jobs
        if settings.mode != "interpret":  # the evaluator here: its chip opened once
            from jaxbench.evaluator import probe_by_first_owner

            probe_by_first_owner()
    if not force and jobs_costed:
        check_cost([j.task for j in jobs_costed], settings.size,
                   settings.mode if cluster_modes is None else "interpret",
                   [j.target for j in jobs_costed], settings.trials, settings.timeout_s)


def _finish(run: Any, jobs: list[Any], results: list[EvaluationResult], stop: Any, wall: float,
            as_json: bool) -> None:
    """Ends the command: an interrupted run stays open, one with lost evaluations too; a
    complete one is finished and summed up. Exits 0 when every kernel is correct (a documented
    limitation of a shipped kernel, runs.jobs.KNOWN_INTERPRET_FAILURES, is reported, not
    counted as a failure of the run)."""
    from jaxbench.evaluator import Status

    out_dir = run.path
    if stop.is_set():
        _interrupted(run, results, len(jobs), stop)
        stop.exit()  # the run stays open: rerunning the command resumes it
    if len(results) < len(jobs):  # evaluations the executor lost (Ray nodes died on every retry)
        click.echo(f"jaxbench: {len(jobs) - len(results)} of {len(jobs)} evaluations got no verdict "
                   f"(their Ray workers or nodes died on every retry; see evaluation_lost in "
                   f"{out_dir}/events.jsonl); rerun the same command to resume", err=True)
        run.interrupt(lost=len(jobs) - len(results))  # reveals this segment's secret
        sys.exit(1)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    run.finish(wall_s=round(wall, 2), counts=counts, evaluations=len(results))
    if not as_json:
        _print_summary(results, out_dir, wall)
    sys.exit(0 if all(r.status == Status.CORRECT or r.extra.get("known_limitation") for r in results)
             else 1)


def _run_with_progress(jobs: list[Any], run: Any, settings: Any, workers: int, as_json: bool,
                       executor: str = "local", ray_address: str | None = None,
                       resuming: bool = False) -> tuple[list[EvaluationResult], Any]:
    from jaxbench.evaluator import Status
    from jaxbench.executors import stop_all
    from jaxbench.runs import finished_keys, run_jobs

    reused = finished_keys(run) & {job.key for job in jobs}
    if reused or resuming:
        click.echo(resuming_line(run.path, len(reused), len(jobs)), err=True)
    message = (f"jaxbench: stopping: evaluations in flight are killed; finished results stay in "
               f"{run.path} (press Ctrl-C again to exit at once)")
    label = f"evaluating ({workers} workers)" if workers else "evaluating (Ray cluster)"
    progress = JobProgress(len(jobs), label, done=len(reused))

    # Ray tasks in flight: cancelled, their workers killed; local tracers and runners killed
    with StopSignals(on_stop=stop_all, message=message) as stop, progress:

        def on_result(job: Any, result: EvaluationResult) -> None:
            if as_json:
                click.echo(json.dumps(result.to_event(), default=str))
            if job.key not in reused:
                progress.advance(f"{job.task} [{job.kind}/{job.target}] {result.status}",
                                 failed=result.status != Status.CORRECT)

        results = run_jobs(jobs, run, settings, workers=workers, on_result=on_result, stop=stop,
                           executor=executor, ray_address=ray_address)
    return results, stop


def _interrupted(run: Any, results: list[EvaluationResult], total: int, stop: Any) -> None:
    """After Ctrl-C or SIGTERM: an interrupted ``run_end`` (revealing nothing, so the run
    resumes) with the command that resumes it, which ``jaxbench report`` shows; said on stderr."""
    import signal

    name = signal.Signals(stop.signum).name if stop.signum else "a signal"
    command = resume_command(run.path)
    try:
        run.interrupt(signal=name, evaluations=len(results), planned=total, resume=command)
    except OSError:  # a full disk: the message below still says how to resume
        pass
    click.echo(f"jaxbench: interrupted by {name}: {len(results)} of {total} evaluations are done "
               f"and kept in {run.path}; resume with:\n  {command}", err=True)


def resuming_line(path: Path, reused: int, total: int) -> str:
    """What a resumed run says first: that it resumes, and how much of it is reused."""
    if not reused:
        return (f"jaxbench: resuming {path}: none of its {total} evaluations had finished; "
                f"all {total} run now")
    rest = f"; {total - reused} to run" if reused < total else "; nothing left to run"
    return f"jaxbench: resuming {path}: {reused} of {total} evaluations are reused from it{rest}"


def short_message(message: str, width: int = 100) -> str:
    """A verdict's message cut to ``width`` characters for the run table, keeping the end of a
    wrong answer's message ("worst at (i, j): got x, truth y") and cutting its middle."""
    if len(message) <= width:
        return message
    head, sep, worst = message.rpartition("; worst at ")
    if sep and len(worst) + 16 < width:
        tail = "; worst at " + worst
        return head[:width - len(tail) - 1] + "…" + tail
    return message[:width - 1] + "…"


def _print_summary(results: list[EvaluationResult], out_dir: Path, wall: float) -> None:
    from rich.table import Table

    from jaxbench.evaluator import Status
    from jaxbench.report import task_order_key  # catalogue order: 2p before 10p

    table = Table(title="jaxbench run")
    for col in ("task", "kernel", "target", "mode", "status", "max abs err", "speedup", "message"):
        table.add_column(col, overflow="fold")
    for r in sorted(results, key=lambda r: (task_order_key(r.task), r.extra.get("kind", ""), r.target)):
        color = "green" if r.status == Status.CORRECT else "red"
        err = f"{r.max_abs_err:.2g}" if r.max_abs_err is not None else "-"
        if r.tol_fraction is not None:
            err += f" ({r.tol_fraction:.2g}× tol)"
        spd = f"{r.speedup:.2f}x" if r.speedup else "-"
        table.add_row(r.task, r.extra.get("kind", ""), r.target, r.mode,
                      f"[{color}]{r.status}[/]", err, spd, short_message(r.message or ""))
    console = make_console()
    console.print(table)
    ok = sum(r.status == Status.CORRECT for r in results)
    known = [r for r in results if r.status != Status.CORRECT and r.extra.get("known_limitation")]
    for r in known:
        console.print(f"known limitation, not a failure of this run: {r.task} "
                      f"{r.extra.get('kind', '')}/{r.target}: {r.extra['known_limitation']}",
                      markup=False)
    expected = f" ({len(known)} known limitation{'s' if len(known) > 1 else ''})" if known else ""
    console.print(f"{ok}/{len(results)} correct{expected} in {wall:.1f} s; run directory: {out_dir}")
