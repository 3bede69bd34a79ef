"""What several commands share: option types, ``--executor``/``--ray-address``, and the checks
made before an evaluation starts (the file's TARGET, the interpret-mode cost estimate)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from jaxbench.cli.terminal import usage_error
from jaxbench.executors import EXECUTORS

# (jaxbench.tasks.UnknownTaskError is a KeyError; importing it here would import JAX.)
USAGE_ERRORS = (FileNotFoundError, KeyError, ValueError)

TARGET = click.Choice(["tpu", "gpu"])
MODE = click.Choice(["auto", "interpret", "device"])
SIZE = click.Choice(["small", "full"])
F = TypeVar("F", bound=Callable[..., Any])


def executor_options(command: F) -> F:
    """``--executor`` and ``--ray-address`` for a command."""
    command = click.option(
        "--ray-address", default=None, metavar="HOST:PORT",
        help="The Ray cluster for --executor ray: its head's HOST:PORT, auto (a running one) "
             "or local (a new one on this host). Default: RAY_ADDRESS, else the cluster last "
             "started with `ray start` on this host, else a new local one.")(command)
    return click.option(
        "--executor", type=click.Choice(EXECUTORS), default="local", show_default=True,
        help="Where evaluations run: worker processes on this host, or Ray tasks on a cluster "
             "(pip install -e '.[ray]').")(command)


def usage_error_from(exc: BaseException) -> None:
    """A usage error with the exception's message (a KeyError's quotes stripped)."""
    usage_error(str(exc).strip("'\""))


def check_cost(task_ids: list[str], size: str, mode: str, targets: list[str], trials: int,
               timeout_s: float | None) -> None:
    """Refuses (usage error) interpret-mode evaluations that cannot finish: over their time
    limit or this host's memory by the evaluator's cost estimate."""
    from jaxbench.backends import resolve_mode
    from jaxbench.evaluator import default_timeout, interpret_cost_problem
    from jaxbench.tasks import get_task

    try:
        if all(resolve_mode(mode, t) != "interpret" for t in set(targets)):
            return
        problems = [p for p in (interpret_cost_problem(
            get_task(t), size, trials, timeout_s or default_timeout(t, "interpret"))
            for t in dict.fromkeys(task_ids)) if p]
    except RuntimeError as exc:  # --mode device without the hardware
        usage_error(str(exc))
    except USAGE_ERRORS as exc:
        usage_error_from(exc)
    if problems:
        more = f" (and {len(problems) - 1} more tasks)" if len(problems) > 1 else ""
        usage_error(f"{problems[0]}{more}; use --size small, a device (--mode device), a longer "
                    "--timeout, or --force to run it anyway")


def check_target(file: Path, target: str | None) -> None:
    """A --target that contradicts the file's TARGET, or a TARGET that names no platform, is a
    usage error (evaluating for the other platform fails with misleading lowering errors)."""
    from jaxbench.evaluator import target_declaration

    declared, problem = target_declaration(file.read_text(errors="replace"))
    if problem:
        usage_error(f"{file}: {problem}")
    if target is not None and declared is not None and target != declared:
        usage_error(f'--target {target} contradicts {file}\'s TARGET = "{declared}": drop '
                    f"--target (the file's TARGET is used) or change TARGET")
