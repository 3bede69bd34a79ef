"""Terminal output shared by the command modules (the CLI and the commands that live beside
their library code, ``validate`` and ``optimize``): one-line usage errors and rich consoles.
Nothing here imports the CLI, so library modules may use it."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click


def usage_error(message: str) -> NoReturn:
    """Prints ``jaxbench: error: <message>`` on stderr and exits 2."""
    click.echo(f"jaxbench: error: {message}", err=True)
    sys.exit(2)


def console(stderr: bool = False) -> Any:
    """A rich console; wide tables when piped to a file or CI log (rich falls back to 80
    columns there)."""
    from rich.console import Console

    width = None if (sys.stderr if stderr else sys.stdout).isatty() else 160
    return Console(stderr=stderr, highlight=False, width=width)
