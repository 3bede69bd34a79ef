"""The ``jaxbench`` command line: a thin layer over the Python API.

Exit codes: 0 success (for ``eval``: the verdict is ``correct``), 1 any other
verdict or a run with failures, 2 a usage error (unknown task, missing file,
malformed option) with a one-line message.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from jaxbench.executors import executor_options
from jaxbench.terminal import console as _console
from jaxbench.terminal import usage_error as _usage_error

# (jaxbench.tasks.UnknownTaskError is a KeyError; importing it here would import JAX.)
USAGE_ERRORS = (FileNotFoundError, KeyError, ValueError)


class _Group(click.Group):
    """Turns usage mistakes click detects into one line and exit 2, and imports the modules of
    commands registered with :meth:`add_lazy_command` only when they run (so `jaxbench --help`
    and the commands defined here never import JAX or another command's module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, tuple[str, str]] = {}

    def add_lazy_command(self, name: str, target: str, short_help: str) -> None:
        """Registers ``module:attribute`` as command ``name``; ``short_help`` is what
        `jaxbench --help` lists for it."""
        self.lazy[name] = (target, short_help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            import importlib

            module, attribute = self.lazy[cmd_name][0].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                rows.append((name, self.commands[name].get_short_help_str(limit=70)))
            else:
                rows.append((name, self.lazy[name][1]))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("standalone_mode", False)
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
            sys.exit(0)
        except click.UsageError as exc:
            hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
            _usage_error(f"{exc.format_message()}{hint}")
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("aborted", err=True)
            sys.exit(130)


@click.group(cls=_Group)
@click.version_option(package_name="jaxbench")
def main() -> None:
    """jaxbench: benchmark, evaluate and optimize Pallas kernels (TPU, GPU; CPU interpret mode)."""


@main.command("tasks")
@click.option("--suite", default=None, help="Only this suite (e.g. jaxbench).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per task on stdout.")
@click.option("--size", type=click.Choice(["small", "full"]), default="full", show_default=True,
              help="Which inputs and GFLOP the table shows (small: what interpret mode runs).")
def tasks_cmd(suite: str | None, as_json: bool, size: str) -> None:
    """List the tasks, their inputs at one size and the kernels shipped with them."""
    from jaxbench.tasks import UnknownTaskError, list_tasks

    try:
        tasks = list_tasks(suite)
    except UnknownTaskError as exc:
        _usage_error(str(exc))
    if as_json:
        for t in tasks:
            click.echo(json.dumps({
                "id": t.id, "suite": t.suite, **{k: v for k, v in t.meta.items()},
                "inputs": {size: [s.describe() for s in specs] for size, specs in t.inputs.items()},
                "flops_full": t.flops("full"), "bytes_full": t.bytes("full"),
                "atol": t.atol, "rtol": t.rtol,
                "kernels": sorted(f"{k}_{tg}" for k, tg in t.kernel_files()),
            }))
        return
    from rich.table import Table

    table = Table(title=f"{len(tasks)} tasks", show_lines=False)
    for col in ("id", "family", f"inputs ({size})", "GFLOP", "kernels"):
        table.add_column(col, overflow="fold")
    group = None
    for t in tasks:  # catalogue order; a section per suite and level
        level = t.meta.get("level")
        key = (t.suite, level if isinstance(level, int) else None)
        if group is not None and key != group:
            table.add_section()
        group = key
        specs = ", ".join(s.describe() for s in t.input_specs(size))
        kernels = " ".join(sorted(f"{k}_{tg}" for k, tg in t.kernel_files()))
        name = f"{t.id} (L{level})" if isinstance(level, int) else t.id
        gflop = t.flops(size) / 1e9
        table.add_row(name, str(t.meta.get("family", "")), specs,
                      f"{gflop:,.0f}" if gflop >= 1 else f"{gflop:.3f}", kernels)
    _console().print(table)


_TARGET = click.Choice(["tpu", "gpu"])
_MODE = click.Choice(["auto", "interpret", "device"])
_SIZE = click.Choice(["small", "full"])


@main.command("eval")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--task", "task_id", required=True, help="Task ID (see `jaxbench tasks`).")
@click.option("--target", type=_TARGET, default=None, help="Defaults to the file's TARGET, else tpu.")
@click.option("--mode", type=_MODE, default="auto", show_default=True)
@click.option("--size", type=_SIZE, default="small", show_default=True)
@click.option("--trials", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Wall-clock seconds per phase (default: from the task's measured seed time).")
@click.option("--no-tpu-interpret", is_flag=True, help="Skip the TPU-interpreter run.")
@click.option("--save-ir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for the jaxpr, StableHLO, kernel IR and XLA analyses.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one result object.")
@click.option("--force", is_flag=True,
              help="Evaluate even when the interpret-mode cost estimate says it cannot finish.")
@click.option("--debug", is_flag=True,
              help="Allow jax.debug.print and show the kernel's output; runs the kernel on the "
                   "untrusted side in interpret mode, once. The verdict does not count (exit 1).")
def eval_cmd(file: Path, task_id: str, target: str | None, mode: str, size: str, trials: int,
             timeout_s: float | None, no_tpu_interpret: bool, save_ir: Path | None,
             as_json: bool, force: bool, debug: bool) -> None:
    """Evaluate one kernel FILE on a task. Exit 0 if correct, 1 otherwise, 2 on usage errors.
    With --debug, always 1: a debug run's verdict does not count."""
    from jaxbench.evaluator import Evaluator
    from jaxbench.terminal import StopSignals

    if not file.is_file():
        _usage_error(f"kernel file {str(file)!r} does not exist")
    _check_target(file, target)
    if save_ir is not None and save_ir.is_dir() and any(save_ir.iterdir()):
        _usage_error(f"--save-ir {save_ir} already holds files; give a new or empty directory "
                     "(nothing was overwritten)")
    if not force:
        from jaxbench.evaluator.static import declared_target

        chosen = target or declared_target(file.read_text(errors="replace")) or "tpu"
        _check_cost([task_id], size, "interpret" if debug else mode, [chosen], trials, timeout_s)
    evaluator = Evaluator(spares=0)
    # Ctrl-C or SIGTERM (a CI kill, `timeout`): the tracer and runner die with their process
    # groups at once, and nothing of them outlives this process.
    with StopSignals(on_stop=evaluator.abort, grace_s=10,
                     message="jaxbench: stopping: the evaluation's processes are killed; "
                             "no verdict") as stop:
        try:
            result = evaluator.evaluate(file, task_id, target=target, mode=mode, size=size,
                                        trials=trials, timeout_s=timeout_s,
                                        tpu_interpret=not no_tpu_interpret, save_ir=save_ir,
                                        debug=debug)
        except RuntimeError as exc:  # e.g. --mode device without the hardware
            if stop.is_set():
                stop.exit()
            _usage_error(str(exc))
        except USAGE_ERRORS as exc:
            _usage_error(str(exc).strip("'\""))
        finally:
            if not stop.is_set():
                evaluator.close()
        if stop.is_set():
            stop.exit()
    if as_json:
        click.echo(json.dumps(result, default=str))
    else:
        _print_result(result)
    sys.exit(0 if result["status"] == "correct" and not result.get("debug") else 1)


def _check_cost(task_ids: list[str], size: str, mode: str, targets: list[str], trials: int,
                timeout_s: float | None) -> None:
    """Refuses (usage error) interpret-mode evaluations that cannot finish: over their time
    limit or this host's memory by the estimate of jaxbench.evaluator.cost."""
    from jaxbench.backends import resolve_mode
    from jaxbench.evaluator.cost import interpret_cost_problem
    from jaxbench.evaluator.timeouts import default_timeout
    from jaxbench.tasks import get_task

    try:
        if all(resolve_mode(mode, t) != "interpret" for t in set(targets)):
            return
        problems = [p for p in (interpret_cost_problem(
            get_task(t), size, trials, timeout_s or default_timeout(t, "interpret"))
            for t in dict.fromkeys(task_ids)) if p]
    except RuntimeError as exc:  # --mode device without the hardware
        _usage_error(str(exc))
    except USAGE_ERRORS as exc:
        _usage_error(str(exc).strip("'\""))
    if problems:
        more = f" (and {len(problems) - 1} more tasks)" if len(problems) > 1 else ""
        _usage_error(f"{problems[0]}{more}; use --size small, a device (--mode device), a longer "
                     "--timeout, or --force to run it anyway")


def _check_target(file: Path, target: str | None) -> None:
    """A --target that contradicts the file's TARGET, or a TARGET that names no platform, is a
    usage error (evaluating for the other platform fails with misleading lowering errors)."""
    from jaxbench.evaluator.static import target_declaration

    declared, problem = target_declaration(file.read_text(errors="replace"))
    if problem:
        _usage_error(f"{file}: {problem}")
    if target is not None and declared is not None and target != declared:
        _usage_error(f'--target {target} contradicts {file}\'s TARGET = "{declared}": drop '
                     f"--target (the file's TARGET is used) or change TARGET")


def _print_result(r: dict[str, Any]) -> None:
    console = _console()
    color = "green" if r["status"] == "correct" else "red"
    if r.get("debug"):
        console.print("[bold yellow]DEBUG RUN: this verdict does not count[/] (jax.debug.print "
                      "allowed; the kernel ran on the untrusted side, not in the trusted judge)")
    console.print(f"[bold]{r['task']}[/] ({r['target']}, {r['mode']}, {r['size']}): "
                  f"[{color}]{r['status']}[/] at stage {r['stage']}")
    if r["message"]:
        console.print(f"  {r['message']}", markup=False)
    if r.get("candidate_frames"):
        console.print("  in the kernel file (innermost last):")
        for frame in r["candidate_frames"]:
            console.print(f"    {frame}", markup=False, highlight=False)
    if r.get("output"):
        size = "8 KB" if r.get("debug") else "2 KB"
        console.print(f"  kernel output (stdout/stderr on the untrusted side, last {size}):")
        for line in r["output"].splitlines():
            console.print(f"    | {line}", markup=False, highlight=False)
    if r["max_abs_err"] is not None:
        line = f"  max abs err {r['max_abs_err']:.3g}, rel err {r['rel_err']:.3g}"
        tol = r.get("tolerance")
        if tol:
            line += f"; tolerance atol {tol['atol']:g} + rtol {tol['rtol']:g}·|truth|"
            if r.get("tol_fraction") is not None:
                line += f", worst element at {r['tol_fraction']:.2g}× its tolerance (≤ 1 passes)"
        console.print(line, markup=False)
    elif r.get("tolerance") and "tol_fraction" in r:
        console.print("  max abs err: none (the output is not finite)")
    if r["speedup"] is not None:
        console.print(f"  t_ref {r['t_ref_ms']:.3f} ms, t_kernel {r['t_kernel_ms']:.3f} ms, "
                      f"speedup {r['speedup']:.2f}x")
    elif r["status"] == "correct":
        console.print("  time: skipped: no accelerator (interpret mode checks correctness only)")
    for warning in r.get("warnings", []):
        console.print(f"  warning: {warning}", markup=False)
    if r.get("judged_on"):
        console.print(f"  judged on: {r['judged_on']}; untrusted side isolated by: {r['isolation']}",
                      markup=False)


@main.command("run")
@click.option("--suite", default=None, help="Suite to run (default: all tasks).")
@click.option("--tasks", "task_ids", default=None, help="Comma-separated task IDs.")
@click.option("--kernels", required=True,
              help="seed, seed_mosaic (Mosaic GPU seeds), expert, or a directory of "
                   "<task_id>.py kernel files.")
@click.option("--target", type=click.Choice(["tpu", "gpu", "all"]), default="all",
              show_default=True)
@click.option("--mode", type=_MODE, default="auto", show_default=True)
@click.option("--size", type=_SIZE, default="small", show_default=True)
@click.option("--trials", type=click.IntRange(1, 100), default=3, show_default=True)
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
@click.option("--force", is_flag=True,
              help="Run even when the interpret-mode cost estimate says evaluations cannot finish.")
@executor_options
def run_cmd(suite: str | None, task_ids: str | None, kernels: str, target: str, mode: str,
            size: str, trials: int, workers: int | None, timeout_s: float | None,
            out_dir: Path | None, save_ir: bool, as_json: bool, executor: str,
            ray_address: str | None, force: bool) -> None:
    """Evaluate shipped kernels (seed/expert) or a directory of kernels into a run directory."""
    from jaxbench.runner import default_workers, directory_jobs, select_tasks, shipped_jobs
    from jaxbench.runs import RunDir, RunError
    from jaxbench.tasks import list_tasks

    targets = ("tpu", "gpu") if target == "all" else (target,)
    skipped: list[str] = []
    try:
        tasks = select_tasks(suite, task_ids)
        if kernels == "seed_mosaic":
            from jaxbench.runner import kernel_unavailable

            if kernel_unavailable("seed_mosaic"):
                import jax

                _usage_error(f"the Mosaic GPU seeds are pl.pallas_call kernels, which JAX "
                             f"{jax.__version__} no longer lowers with Mosaic GPU params (JAX "
                             "0.10 does); use --kernels seed (Triton) here")
        if kernels in ("seed", "seed_mosaic", "expert"):
            jobs = shipped_jobs(tasks if tasks is not None else list_tasks(), kernels, targets)
        else:
            directory = Path(kernels)
            if not directory.is_dir():
                _usage_error(f"--kernels must be seed, seed_mosaic, expert or a directory; "
                             f"{kernels!r} is none")
            jobs = directory_jobs(directory, tasks, targets, skipped)
    except USAGE_ERRORS as exc:
        _usage_error(str(exc).strip("'\""))
    if not jobs:
        why = f": skipped {'; '.join(skipped)}" if skipped else "; see `jaxbench tasks`"
        _usage_error(f"no {kernels} kernels match (target {target}){why}")
    for note in skipped:
        click.echo(f"jaxbench: skipping {note}", err=True)
    from jaxbench.executors import ExecutorError, check_executor

    try:  # a cluster that cannot run the jobs is a usage error before the run directory exists
        cluster_modes = check_executor(executor, ray_address, mode, {job.target for job in jobs})
    except ExecutorError as exc:
        _usage_error(str(exc))
    if cluster_modes is not None:  # modes resolved on the Ray cluster: estimate interpret jobs only
        jobs_costed = [j for j in jobs if cluster_modes[j.target] == "interpret"]
    else:
        jobs_costed = jobs
    if not force and jobs_costed:
        _check_cost([j.task for j in jobs_costed], size, mode if cluster_modes is None else "interpret",
                    [j.target for j in jobs_costed], trials, timeout_s)
    workers = workers or (0 if executor == "ray" else default_workers())  # 0: the cluster's slots
    out_dir = out_dir or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{Path(kernels).name}"
    config = {"command": "run", "kernels": kernels, "suite": suite, "tasks": task_ids,
              "target": target, "mode": mode, "size": size, "trials": trials}
    try:
        run = RunDir.open(out_dir, config)
    except RunError as exc:
        _usage_error(str(exc))
    started = time.monotonic()
    results, stop = _run_with_progress(jobs, run, size, mode, workers,
                                       {"trials": trials, "timeout_s": timeout_s,
                                        "save_ir": save_ir}, as_json, executor, ray_address)
    wall = time.monotonic() - started
    if stop.is_set():
        _print_interrupted(results, len(jobs), out_dir, stop)
        stop.exit()  # the run stays open: rerunning the command resumes it
    if len(results) < len(jobs):  # evaluations the executor lost (Ray nodes died on every retry)
        click.echo(f"jaxbench: {len(jobs) - len(results)} of {len(jobs)} evaluations got no verdict "
                   f"(their Ray workers or nodes died on every retry; see evaluation_lost in "
                   f"{out_dir}/events.jsonl); rerun the same command to resume", err=True)
        sys.exit(1)
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    run.finish(wall_s=round(wall, 2), counts=counts, evaluations=len(results))
    if not as_json:
        _print_summary(results, out_dir, wall)
    # a documented limitation of a shipped kernel (runner.KNOWN_INTERPRET_FAILURES) is reported,
    # not counted as a failure of the run
    sys.exit(0 if all(r["status"] == "correct" or r.get("known_limitation") for r in results)
             else 1)


def _run_with_progress(jobs: list[Any], run: Any, size: str, mode: str, workers: int,
                       options: dict[str, Any], as_json: bool, executor: str = "local",
                       ray_address: str | None = None) -> tuple[list[dict[str, Any]], Any]:
    from jaxbench.evaluator import kill_children
    from jaxbench.runner import finished_keys, run_jobs
    from jaxbench.terminal import JobProgress, StopSignals

    reused = finished_keys(run) & {job.key for job in jobs}
    if reused:
        click.echo(f"jaxbench: resuming {run.path}: {len(reused)} of {len(jobs)} evaluations are "
                   "reused from it", err=True)
    message = (f"jaxbench: stopping: evaluations in flight are killed; finished results stay in "
               f"{run.path} (press Ctrl-C again to exit at once)")
    from jaxbench.executors import abort_all

    label = f"evaluating ({workers} workers)" if workers else "evaluating (Ray cluster)"
    progress = JobProgress(len(jobs), label, done=len(reused))

    def on_stop() -> None:
        abort_all()  # Ray tasks in flight: cancelled, their workers killed
        kill_children()

    with StopSignals(on_stop=on_stop, message=message) as stop, progress:

        def on_result(job: Any, result: dict[str, Any]) -> None:
            if as_json:
                click.echo(json.dumps(result, default=str))
            if job.key not in reused:
                progress.advance(f"{job.task} [{job.kind}/{job.target}] {result['status']}",
                                 failed=result["status"] != "correct")

        results = run_jobs(jobs, run, size=size, mode=mode, workers=workers,
                           evaluate_options=options, on_result=on_result, stop=stop,
                           executor=executor, ray_address=ray_address)
    return results, stop


def _print_interrupted(results: list[dict[str, Any]], total: int, out_dir: Path, stop: Any) -> None:
    import shlex
    import signal

    args = sys.argv[1:]
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", str(out_dir)]
    name = signal.Signals(stop.signum).name if stop.signum else "a signal"
    click.echo(f"jaxbench: interrupted by {name}: {len(results)} of {total} evaluations are done "
               f"and kept in {out_dir}; resume with:\n  jaxbench {shlex.join(args)}", err=True)


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


def _print_summary(results: list[dict[str, Any]], out_dir: Path, wall: float) -> None:
    from rich.table import Table

    from jaxbench.report.data import task_order_key  # catalogue order: 2p before 10p

    table = Table(title="jaxbench run")
    for col in ("task", "kernel", "target", "mode", "status", "max abs err", "speedup", "message"):
        table.add_column(col, overflow="fold")
    for r in sorted(results, key=lambda r: (task_order_key(r["task"]), r.get("kind", ""), r["target"])):
        color = "green" if r["status"] == "correct" else "red"
        err = f"{r['max_abs_err']:.2g}" if r.get("max_abs_err") is not None else "-"
        if r.get("tol_fraction") is not None:
            err += f" ({r['tol_fraction']:.2g}× tol)"
        spd = f"{r['speedup']:.2f}x" if r.get("speedup") else "-"
        table.add_row(r["task"], r.get("kind", ""), r["target"], r["mode"],
                      f"[{color}]{r['status']}[/]", err, spd, short_message(r["message"] or ""))
    console = _console()
    console.print(table)
    ok = sum(r["status"] == "correct" for r in results)
    known = [r for r in results if r["status"] != "correct" and r.get("known_limitation")]
    for r in known:
        console.print(f"known limitation, not a failure of this run: {r['task']} "
                      f"{r.get('kind', '')}/{r['target']}: {r['known_limitation']}", markup=False)
    expected = f" ({len(known)} known limitation{'s' if len(known) > 1 else ''})" if known else ""
    console.print(f"{ok}/{len(results)} correct{expected} in {wall:.1f} s; run directory: {out_dir}")


@main.command("export-tasks")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--suite", default=None, help="Suite to export (default: all tasks).")
@click.option("--tasks", "task_ids", default=None, help="Comma-separated task IDs.")
@click.option("--target", type=_TARGET, required=True)
@click.option("--format", "fmt", type=click.Choice(["shinka"]), default="shinka", show_default=True)
@click.option("--size", type=_SIZE, default="small", show_default=True,
              help="The size the exported evaluator checks (and times, in device mode).")
@click.option("--mode", type=_MODE, default="auto", show_default=True)
def export_tasks_cmd(out_dir: Path, suite: str | None, task_ids: str | None, target: str, fmt: str,
                     size: str, mode: str) -> None:
    """Write one ready task folder per task for an external optimizer (ShinkaEvolve)."""
    from jaxbench.runner import select_tasks
    from jaxbench.shinka_export import ExportError, export_tasks
    from jaxbench.tasks import list_tasks

    try:
        tasks = select_tasks(suite, task_ids) or list_tasks()
        written = export_tasks(tasks, target, out_dir, size=size, mode=mode)
    except (ExportError, *USAGE_ERRORS) as exc:
        _usage_error(str(exc).strip("'\""))
    if not written:
        _usage_error(f"no task of the selection ships a {target} seed; see `jaxbench tasks`")
    click.echo(f"wrote {len(written)} {fmt} task folder{'s' * (len(written) != 1)} to {out_dir} "
               f"(run: python {out_dir}/<task>/evaluate.py --program_path P --results_dir D)")


# Commands that live beside their library code, imported only when they run.
main.add_lazy_command("optimize", "jaxbench.agents.commands:optimize_cmd",
                      "Optimize kernels with an LLM: spend up to BUDGET samples per task with one method.")
main.add_lazy_command("report", "jaxbench.report.commands:report_cmd",
                      "Summarize a run directory: best speedup and status per task, rates, cost.")
main.add_lazy_command("compare", "jaxbench.report.commands:compare_cmd",
                      "Compare two run directories task by task: status and speedup changes.")
main.add_lazy_command("export", "jaxbench.export.commands:export_cmd",
                      "Write a run's evaluations as Parquet, JSONL, CSV or Sakana-archive records.")
main.add_lazy_command("validate", "jaxbench.validate:validate_cmd",
                      "Check that each task's reference is a meaningful, fairly-toleranced problem.")
main.add_lazy_command("doctor", "jaxbench.doctor:doctor_cmd",
                      "Report JAX, devices, Pallas backends, isolation, chip peaks, cross-lowering.")

if __name__ == "__main__":
    main()
