"""``jaxbench report DIR [--json | --html FILE]`` and ``jaxbench compare RUN_A RUN_B``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from jaxbench.cli.terminal import console, usage_error


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write an HTML report with charts and the sample view, which opens offline "
                   "(plotly.js and NAME.samples/ are written beside it; needs the results extra).")
@click.option("--samples", is_flag=True,
              help="List an agent run's samples instead: per task and method · target, each sample "
                   "under its parent, with its verdict, failure category, figures and message.")
@click.option("--task", "task_id", default=None, help="With --samples: this task's samples only.")
@click.option("--status", default=None, help="With --samples: the samples with this status only.")
@click.option("--category", default=None,
              help="With --samples: the samples of this failure category only (key or label, e.g. "
                   "trace_error or 'trace error').")
@click.option("--step", default=None,
              help="With --samples and --task: this sample in full (prompt, answer, kernel, diff "
                   "from its parent).")
def report_cmd(run_dir: Path, as_json: bool, html_file: Path | None, samples: bool, task_id: str | None,
               status: str | None, category: str | None, step: str | None) -> None:
    """Summarize a run directory: status and best speedup per task.

    Also the compile rate, correct rate, fast_0/fast_1@N and the geomean speedup per
    method. With --samples, an agent run's samples one by one."""
    from rich.console import Console

    from jaxbench.report import print_summary, summarize

    if not samples and (task_id or status or category or step):
        usage_error("--task, --status, --category and --step go with --samples")
    if step and not task_id:
        usage_error("--step needs --task (steps are named per task)")
    if samples:
        _print_samples(run_dir, task_id, status, category, step)
        return
    try:
        summary = summarize(run_dir)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None
    if html_file is not None:
        from jaxbench.report import write_report

        try:
            write_report(run_dir, html_file)
        except (RuntimeError, ValueError, OSError) as exc:
            usage_error(str(exc))
    if as_json:
        click.echo(json.dumps(summary, default=str))
        return
    width = None if sys.stdout.isatty() else 160
    print_summary(summary, Console(highlight=False, width=width))
    if html_file is not None:
        click.echo(f"HTML report: {html_file}")
        view = html_file.with_name(html_file.stem + ".samples.html")
        if view.is_file():
            click.echo(f"sample view: {view}")


def _print_samples(run_dir: Path, task_id: str | None, status: str | None, category: str | None,
                   step: str | None) -> None:
    from rich.console import Console

    from jaxbench.report import lineage_run, load_run, print_samples

    try:
        run = load_run(run_dir)
    except (FileNotFoundError, ValueError) as exc:
        usage_error(str(exc))
    if not lineage_run(run):
        usage_error(f"{run_dir} holds no agent samples (a `jaxbench optimize` run has them)")
    if task_id and task_id not in run.task_ids:
        usage_error(f"{run_dir} has no samples of task {task_id!r}")
    width = None if sys.stdout.isatty() else 160
    try:
        shown = print_samples(run, Console(highlight=False, width=width), task=task_id, status=status,
                              category=category, step=step)
    except ValueError as exc:
        usage_error(str(exc))
    if not shown:
        click.echo(f"no step {step!r} in {task_id}" if step else "no sample matches these filters")


@click.command("compare")
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="Relative speedup change below which a task counts as unchanged.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as one JSON object.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the comparison as an HTML page (plotly.js is written beside it).")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when any task regressed.")
@click.option("--common/--all", "common", default=None,
              help="List only the rows both runs have, or every row. Default: --common when one "
                   "run's rows are a subset of the other's (e.g. one task against a suite).")
def compare_cmd(run_a: Path, run_b: Path, threshold: float, as_json: bool, html_file: Path | None,
                fail_on_regression: bool, common: bool | None) -> None:
    """Compare two runs task by task: status and speedup changes.

    From RUN_A to RUN_B, regressions first."""
    from jaxbench.report import compare, print_comparison, write_comparison_html

    try:
        result = compare(run_a, run_b, threshold, common)
    except (FileNotFoundError, ValueError) as exc:
        usage_error(str(exc))
    if html_file is not None:
        try:
            write_comparison_html(result, html_file)
        except (RuntimeError, OSError) as exc:
            usage_error(str(exc))
    if as_json:
        click.echo(json.dumps(result, default=str))
    else:
        print_comparison(result, console())
        if html_file is not None:
            click.echo(f"HTML comparison: {html_file}")
    if fail_on_regression and result["counts"]["regression"]:
        sys.exit(1)
