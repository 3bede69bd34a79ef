"""``jaxbench tasks``: the catalogue as a table or JSON lines."""

from __future__ import annotations

import json

import click

from jaxbench.cli.terminal import console, usage_error


@click.command("tasks")
@click.option("--suite", default=None, help="Only this suite (e.g. jaxbench).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per task on stdout.")
@click.option("--size", type=click.Choice(["small", "full"]), default="full", show_default=True,
              help="Which inputs and GFLOP the table shows (small: what interpret mode runs).")
def tasks_cmd(suite: str | None, as_json: bool, size: str) -> None:
    """List the tasks, their inputs and the kernels shipped with them."""
    from jaxbench.tasks import UnknownTaskError, list_tasks

    try:
        tasks = list_tasks(suite)
    except UnknownTaskError as exc:
        usage_error(str(exc))
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
    console().print(table)
