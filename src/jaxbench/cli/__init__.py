"""The ``jaxbench`` command line: one module per command (or command group), each a thin layer
over the library's public API. No library module imports this package.

Exit codes: 0 success (for ``eval``: the verdict is ``correct``), 1 any other verdict or a
run with failures, 2 a usage error (unknown task, missing file, malformed option) with a
one-line message.

The group imports a command's module only when that command runs, so ``jaxbench --help`` and
every command's ``--help`` start without importing JAX.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Any

import click

from jaxbench.backends import keep_off_accelerators
from jaxbench.cli.terminal import usage_error

# name: (module under jaxbench.cli, the command's function)
COMMANDS: dict[str, tuple[str, str]] = {
    "tasks": ("tasks", "tasks_cmd"),
    "eval": ("eval", "eval_cmd"),
    "run": ("run", "run_cmd"),
    "optimize": ("optimize", "optimize_cmd"),
    "report": ("report", "report_cmd"),
    "compare": ("report", "compare_cmd"),
    "export": ("export", "export_cmd"),
    "export-tasks": ("export", "export_tasks_cmd"),
    "validate": ("validate", "validate_cmd"),
    "doctor": ("doctor", "doctor_cmd"),
    "serve": ("serve", "serve_cmd"),
    "hold": ("hold", "hold_cmd"),
}


def short_help(name: str) -> str:
    """What `jaxbench --help` lists for a command: the start of its function's docstring (as
    click would show it), read from the module's source, so that listing the commands loads
    none of their modules."""
    module, attribute = COMMANDS[name]
    tree = ast.parse((Path(__file__).parent / f"{module}.py").read_text())
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == attribute)
    return click.utils.make_default_short_help(ast.get_docstring(function) or "", 70)


class _Group(click.Group):
    """Turns usage mistakes click detects into one line and exit 2, and imports a command's
    module only when the command runs (or shows its own --help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"jaxbench.cli.{module}"), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:  # a typo: suggest the closest commands, as for options
            import difflib

            known = self.list_commands(ctx)
            name = args[0] if args else ""
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            if close and name not in known:
                shown = " or ".join(repr(c) for c in close)
                exc.message = f"{exc.message.rstrip()} (Did you mean {shown}?)"
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.commands[name].get_short_help_str(limit=70) if name in self.commands
                 else short_help(name))
                for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # Before any command imports JAX: this process sees only the CPU; the chip belongs to
        # the device owner the evaluator starts (jaxbench.backends.host).
        keep_off_accelerators()
        kwargs.setdefault("standalone_mode", False)
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
            sys.exit(0)
        except click.UsageError as exc:
            hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
            usage_error(f"{exc.format_message()}{hint}")
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("aborted", err=True)
            sys.exit(130)


@click.group(cls=_Group)
@click.version_option(package_name="jaxbench")
def main() -> None:
    """jaxbench: benchmark, evaluate and optimize Pallas kernels (TPU, GPU; CPU interpret mode)."""


__all__ = ["COMMANDS", "main", "short_help"]
