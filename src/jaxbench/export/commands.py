"""``jaxbench export RUN_DIR --format ...``: a run's evaluations as a dataset file."""

from __future__ import annotations

from pathlib import Path

import click

from jaxbench.terminal import usage_error

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
    """Write a run directory's evaluations as a dataset: one row per evaluation with the same,
    versioned columns for every suite and method (loadable by pandas and `datasets`)."""
    from jaxbench import export
    from jaxbench.export import sakana

    if fmt == "sakana-parquet":
        out = out or Path(sakana.DEFAULT_PARQUET_DIR)
        if out.exists() and not out.is_dir():
            usage_error(f"--out {str(out)!r} is a file; sakana-parquet writes a directory of "
                        "level_<N>.parquet files")
    else:
        if out is None:
            out = Path(sakana.DEFAULT_JSON) if fmt == "sakana" else Path(f"{run_dir.resolve().name}.{fmt}")
        if out.is_dir():
            usage_error(f"--out {str(out)!r} is a directory; give a file name")
    try:
        if fmt == "sakana":
            count = sakana.write_json(run_dir, out)
            what = f"{count} Sakana-archive record{'s' * (count != 1)}"
        elif fmt == "sakana-parquet":
            files = sakana.write_parquet(run_dir, out)
            total = sum(files.values())
            what = (f"{total} Sakana-archive record{'s' * (total != 1)} in "
                    f"{', '.join(sorted(files)) or 'no file'}")
        else:
            count = export.write(run_dir, fmt, out)
            what = f"{count} row{'s' * (count != 1)} (jaxbench results schema v{export.SCHEMA_VERSION})"
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        usage_error(str(exc))
    click.echo(f"wrote {what} to {out}")
