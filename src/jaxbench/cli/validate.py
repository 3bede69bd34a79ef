"""``jaxbench validate``: the task validator over a suite, as a table or JSON lines."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from jaxbench.cli.common import executor_options, load_task_files, task_file_option, usage_error_from
from jaxbench.cli.terminal import JobProgress, console, usage_error


def _select(suite: str | None, task_ids: str | None) -> list[Any]:
    from jaxbench.tasks import get_task, list_tasks

    if task_ids:
        ids = [t.strip() for t in task_ids.split(",") if t.strip()]
        return [t for t in map(get_task, ids) if suite is None or t.suite == suite]
    return list_tasks(suite)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _mark(check: Any, text: str | None = None) -> str:
    shown = text if text is not None else ("ok" if check.ok else "FLAG")
    return f"[green]{shown}[/]" if check.ok else f"[red]{shown}[/]"


@click.command("validate")
@click.option("--suite", default=None, help="Only this suite (e.g. jaxbench).")
@click.option("--task", "task_ids", default=None, help="Task ID (or comma-separated IDs).")
@click.option("--size", type=click.Choice(["small", "full"]), default="small", show_default=True)
@click.option("--seeds", type=click.IntRange(2, 1000), default=5, show_default=True,
              help="Input seeds per task.")
@click.option("--json", "as_json", is_flag=True, help="One JSON report per task on stdout.")
@task_file_option
@executor_options
def validate_cmd(suite: str | None, task_ids: str | None, size: str, seeds: int,
                 as_json: bool, executor: str, ray_address: str | None,
                 task_files: tuple = ()) -> None:
    """Check that each task's reference is a meaningful, fair problem.

    Finite, non-constant, depends on every input, and its tolerance accepts the bf16 XLA
    reference. Exit 1 if any task is flagged."""
    from rich.table import Table

    from jaxbench.executors import ExecutorError, check_executor, map_jobs
    from jaxbench.validation import validate_one

    own = load_task_files(task_files, executor)
    try:
        tasks = _select(suite, task_ids) if (suite or task_ids or not own) else []
    except (KeyError, ValueError) as exc:  # an unknown task (UnknownTaskError is a KeyError)
        usage_error_from(exc)
    if own:  # the task files' tasks are checked as shipped ones are
        from jaxbench.tasks import get_task

        tasks += [get_task(entry[0]) for entry in own if entry[0] not in {t.id for t in tasks}]
    if not tasks:
        usage_error(f"no task matches (suite {suite!r}, task {task_ids!r}); see `jaxbench tasks`")
    for t in tasks:
        if size not in t.sizes:
            usage_error(f"task {t.id} has no size {size!r}")
    try:
        check_executor(executor, ray_address, "interpret", ())
    except ExecutorError as exc:
        usage_error(str(exc))

    out = console()
    started = time.monotonic()
    # A live bar on a terminal; plain lines (one per task, and while waiting) in logs.
    with JobProgress(len(tasks), "validating", disable=as_json) as progress:

        def finished(report: Any) -> None:
            if as_json:
                click.echo(json.dumps(report.to_dict(), default=str))
            progress.advance(f"{report.task} {'flagged' if report.flagged else 'ok'}",
                             failed=report.flagged)

        # one job per task, reports in the tasks' order; a Ray task each with --executor ray,
        # whose node looks the task up by its ID
        jobs = [(t.id if executor == "ray" else t, size, seeds) for t in tasks]
        reports = map_jobs(executor, validate_one, jobs, ray_address=ray_address,
                           on_result=finished)
    wall = time.monotonic() - started
    flagged = [r for r in reports if r.flagged]
    if not as_json:
        table = Table(title=f"jaxbench validate ({size}, {seeds} seeds)")
        for col in ("task", "finite", "non-constant", "inputs-matter", "tol-calibration\n(worst err/tol)",
                    "work\n(XLA/nominal)", "flags", "s"):
            table.add_column(col, overflow="fold")
        for r in reports:
            n_in = len(r.inputs)
            n_ok = sum(i.matters and not i.inert for i in r.inputs)
            n_inert = sum(bool(i.inert) and not i.matters for i in r.inputs)
            notes = r.flags + [f"warn: {w}" for w in r.warnings]
            table.add_row(
                r.task, _mark(r.finite), _mark(r.non_constant),
                _mark(r.inputs_matter, f"{n_ok}/{n_in}" + (f" ({n_inert} inert)" if n_inert else "")),
                _mark(r.tolerance, _fmt(r.tolerance.value)),
                _mark(r.work, f"{r.work.value:.3g}" if r.work.value is not None else ""),
                "\n".join(notes) or "-", f"{r.seconds:.1f}")
        out.print(table)
        out.print(f"{len(reports) - len(flagged)}/{len(reports)} tasks pass; "
                  f"{len(flagged)} flagged; {wall:.1f} s", markup=False)
    sys.exit(1 if flagged else 0)
