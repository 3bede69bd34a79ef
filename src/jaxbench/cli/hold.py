"""``jaxbench hold``: keep the chip's owner between commands (docs/evaluator.md, "A held chip")."""

from __future__ import annotations

import json
import os
import time

import click

from jaxbench.cli.terminal import StopSignals, usage_error


@click.command("hold")
@click.option("--idle", "idle_s", type=click.FloatRange(1), default=600.0, show_default=True,
              help="Seconds without a command before the chip is released.")
@click.option("--status", "show_status", is_flag=True,
              help="Say whether a chip is held, by which process, and exit (1: none held).")
@click.option("--stop", "stop_it", is_flag=True,
              help="Tell the held chip to release the chip and exit (1: none held).")
@click.option("--json", "as_json", is_flag=True, help="With --status or --stop: one JSON object.")
def hold_cmd(idle_s: float, show_status: bool, stop_it: bool, as_json: bool) -> None:
    """Hold the chip: its owner serves the device-mode commands that follow.

    Opens the attached TPU or GPU once and keeps its owner (the one process that compiles,
    runs and times on it) for this user's `jaxbench eval`, `run`, `optimize` and `serve`,
    which then neither open the chip nor wait for its release. Runs until --idle seconds
    pass with no command, `jaxbench hold --stop`, or Ctrl-C."""
    from jaxbench.evaluator import HoldError, held_status, stop_held

    if show_status and stop_it:
        usage_error("give --status or --stop, not both")
    if show_status or stop_it:
        try:
            found = (stop_held if stop_it else held_status)()
        except (HoldError, OSError) as exc:
            usage_error(str(exc))
        if as_json:
            click.echo(json.dumps(found))
        elif found is None:
            click.echo("no chip is held")
        else:
            said = found.get("probe", {})
            verb = "was holding" if stop_it else "holds"
            click.echo(f"pid {found['pid']} {verb} {said.get('device_kind')} for "
                       f"{time.time() - found['since']:.0f} s: {found['served']} requests "
                       f"served, {found['in_flight']} in flight (socket {found['socket']})")
        raise SystemExit(0 if found is not None else 1)
    _hold(idle_s)


def _hold(idle_s: float) -> None:
    from jaxbench.evaluator import HeldChip, HoldError, kill_children, owner_depth

    chip = HeldChip(idle_s=idle_s, depth=owner_depth())
    try:
        said = chip.start()
    except HoldError as exc:
        usage_error(str(exc))
    click.echo(f"holding {said.get('count')} x {said.get('device_kind')} for this user's "
               f"device-mode commands (pid {os.getpid()}, socket {chip.path}); released after "
               f"{idle_s:g} s idle, on `jaxbench hold --stop` or Ctrl-C", err=True)
    with StopSignals(on_stop=chip.stop) as signals:
        why = chip.serve()
    click.echo(f"released the chip: {'interrupted' if signals.is_set() else why}", err=True)
    kill_children()
