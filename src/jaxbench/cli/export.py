"""``jaxbench export RUN_DIR --format ...`` (a run's evaluations as a dataset file) and
``jaxbench export-tasks OUT --format shinka`` (tasks as folders for an external optimizer)."""

from __future__ import annotations

from pathlib import Path

import click

from jaxbench.cli.common import MODE, SIZE, TARGET, USAGE_ERRORS, usage_error_from
from jaxbench.cli.terminal import usage_error

_FORMATS = ("parquet", "jsonl", "csv", "sakana", "sakana-parquet")


@click.command("export")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="parquet", show_default=True,
              help="parquet/jsonl/csv: one row per evaluation (docs/results.md); sakana: the "
                   "Sakana-archive records as JSON; sakana-parquet: the same, one Parquet file per level.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output file (a directory for sakana-parquet). Default: <run name>.<format> here; "
                   "sakanaai_pallasbench.json; sakanaai_pallasbench/.")
def export_cmd(run_dir: Path, fmt: str, out: Path | None) -> None:
    """Write a run's evaluations as Parquet, JSONL, CSV or Sakana records.

    One row per evaluation with the same, versioned columns for every suite and method
    (loadable by pandas and `datasets`)."""
    from jaxbench.export import (
        SAKANA_JSON,
        SAKANA_PARQUET_DIR,
        SCHEMA_VERSION,
        write,
        write_sakana_json,
        write_sakana_parquet,
    )

    if fmt == "sakana-parquet":
        out = out or Path(SAKANA_PARQUET_DIR)
        if out.exists() and not out.is_dir():
            usage_error(f"--out {str(out)!r} is a file; sakana-parquet writes a directory of "
                        "level_<N>.parquet files")
    else:
        if out is None:
            out = Path(SAKANA_JSON) if fmt == "sakana" else Path(f"{run_dir.resolve().name}.{fmt}")
        if out.is_dir():
            usage_error(f"--out {str(out)!r} is a directory; give a file name")
    try:
        if fmt == "sakana":
            count = write_sakana_json(run_dir, out)
            what = f"{count} Sakana-archive record{'s' * (count != 1)}"
        elif fmt == "sakana-parquet":
            files = write_sakana_parquet(run_dir, out)
            total = sum(files.values())
            what = (f"{total} Sakana-archive record{'s' * (total != 1)} in "
                    f"{', '.join(sorted(files)) or 'no file'}")
        else:
            count = write(run_dir, fmt, out)
            what = f"{count} row{'s' * (count != 1)} (jaxbench results schema v{SCHEMA_VERSION})"
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        usage_error(str(exc))
    click.echo(f"wrote {what} to {out}")


@click.command("export-tasks")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--suite", default=None, help="Suite to export (default: all tasks).")
@click.option("--tasks", "task_ids", default=None, help="Comma-separated task IDs.")
@click.option("--target", type=TARGET, required=True)
@click.option("--format", "fmt", type=click.Choice(["shinka"]), default="shinka", show_default=True)
@click.option("--size", type=SIZE, default="small", show_default=True,
              help="The size the exported evaluator checks (and times, in device mode).")
@click.option("--mode", type=MODE, default="auto", show_default=True)
@click.option("--python", "python", default=None, metavar="PATH",
              help="The interpreter ShinkaEvolve runs evaluate.py with (its "
                   "job_config.python_executable); it must have jaxbench installed. Default: the "
                   "one running this command.")
def export_tasks_cmd(out_dir: Path, suite: str | None, task_ids: str | None, target: str, fmt: str,
                     size: str, mode: str, python: str | None) -> None:
    """Write one task folder per task for an external optimizer.

    The folders are ready for ShinkaEvolve: initial.py (the seed), evaluate.py, shinka.yaml."""
    from jaxbench.export import ExportError, export_tasks
    from jaxbench.runs import select_tasks
    from jaxbench.tasks import list_tasks

    try:
        tasks = select_tasks(suite, task_ids) or list_tasks()
        written = export_tasks(tasks, target, out_dir, size=size, mode=mode, python=python)
    except (ExportError, *USAGE_ERRORS) as exc:
        usage_error_from(exc)
    if not written:
        usage_error(f"no task of the selection ships a {target} seed; see `jaxbench tasks`")
    click.echo(f"wrote {len(written)} {fmt} task folder{'s' * (len(written) != 1)} to {out_dir} "
               f"(run: python {out_dir}/<task>/evaluate.py --program_path P --results_dir D)")
