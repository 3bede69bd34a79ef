"""``jaxbench report DIR [--json]``: per-task best results and per-method metrics of a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def report_cmd(run_dir: Path, as_json: bool) -> None:
    """Summarize a run directory: best speedup and status per task; compile rate, correct rate,
    fast_0/fast_1@N and the geomean speedup per method."""
    from rich.console import Console

    from jaxbench.report.summary import print_summary, summarize

    try:
        summary = summarize(run_dir)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(summary, default=str))
        return
    width = None if sys.stdout.isatty() else 160
    print_summary(summary, Console(highlight=False, width=width))
