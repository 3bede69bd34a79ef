"""``jaxbench doctor``: what this machine offers the evaluator, as a table or JSON."""

from __future__ import annotations

import json
from typing import Any

import click

from jaxbench.cli.terminal import console


def _show(report: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    class _Plain(Table):  # findings are text, not markup: "pip install -e '.[triton]'" stays
        def add_row(self, *cells: Any, **options: Any) -> None:
            super().add_row(*(escape(str(c)) for c in cells), **options)

    table = _Plain(title="jaxbench doctor", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("found")
    v = report["versions"]
    table.add_row("versions", f"Python {v['python']}, JAX {v['jax']}, jaxlib {v['jaxlib']} "
                              f"({v['system']})")
    b = report["backends"]
    table.add_row("devices: this process", ", ".join(b["this process"]))
    table.add_row("accelerator", b["accelerator"])
    for name, state in report["pallas_backends"].items():
        table.add_row(f"pallas backend: {name}", state)
    table.add_row("isolation", report["isolation"])
    table.add_row("seal", report["seal"])
    for name, meaning in report["host_limits"].items():
        table.add_row(f"host limit: {name}", meaning)
    p = report["peaks"]
    if p["peak_bf16_flops"]:
        table.add_row("chip peaks", f"{p['device_kind']}: {p['peak_bf16_flops'] / 1e12:g} TFLOP/s "
                                    f"bf16 dense, {p['peak_bytes_per_s'] / 1e12:g} TB/s HBM")
    else:
        table.add_row("chip peaks", f"{p['device_kind']}: {p['note']}")
    for label, state in report["cross_lowering"].items():
        table.add_row(f"cross-lowering: {label}", state)
    table.add_row("Triton's compiler (sm_80)", report["triton_compiler"])
    table.add_row("profiler (this process's CPU)", report["profiler"])
    table.add_row("compile cache (the judge's)", report["compile_cache"])
    if "held_chip" in report:
        table.add_row("held chip (jaxbench hold)", report["held_chip"])
    console().print(table)


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def doctor_cmd(as_json: bool) -> None:
    """Report JAX, devices, Pallas backends, isolation and chip peaks.

    Also whether tiny kernels cross-lower for TPU and GPU here, and whether the profiler
    gives device times."""
    from jaxbench.evaluator import diagnose

    report = diagnose()
    if as_json:
        click.echo(json.dumps(report, default=str))
    else:
        _show(report)
