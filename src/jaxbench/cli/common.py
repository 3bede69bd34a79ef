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


def sealed_command(command: F) -> F:
    """``--unsealed`` for a command whose verdicts feed leaderboards or rewards (run, optimize,
    serve): before it starts, the host must seal the processes that run kernels (seccomp or
    Landlock), else it stops with one line naming what is missing, unless ``--unsealed``. A
    Ray cluster's nodes are not probed from here: each result records what sealed it."""
    import functools

    @functools.wraps(command)
    def checked(*args: Any, unsealed: bool = False, **kwargs: Any) -> Any:
        if kwargs.get("executor", "local") != "ray":
            from jaxbench.evaluator import Unsealed, require_seal

            try:
                if not require_seal(unsealed):
                    click.echo("warning: nothing seals the kernels' processes on this host "
                               "(--unsealed): every result records sealed: none", err=True)
            except (Unsealed, ValueError) as exc:
                usage_error(str(exc))
        return command(*args, **kwargs)

    return click.option(  # type: ignore[return-value]
        "--unsealed", is_flag=True,
        help="Run even where no seal (seccomp, Landlock) can be installed; verdicts could then "
             "be forged, and every result records sealed: none.")(checked)


def error_text(exc: BaseException) -> str:
    """An exception's message for one line: a plain KeyError's repr quotes left out (nothing
    else is stripped: a message may end with a quote, as ``pip install 'jaxbench[openai]'``)."""
    if isinstance(exc, KeyError) and type(exc).__str__ is KeyError.__str__ and len(exc.args) == 1:
        return str(exc.args[0])
    return str(exc)


def usage_error_from(exc: BaseException) -> None:
    """A usage error with the exception's message (a KeyError's quotes left out)."""
    usage_error(error_text(exc))


def resume_command(out_dir: Path) -> str:
    """The command line that resumes this run: the command as given, with ``--out`` added
    when it was not."""
    import shlex
    import sys

    args = sys.argv[1:]
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", str(out_dir)]
    return f"jaxbench {shlex.join(args)}"


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


def timing_option(command: F) -> F:
    """``--timing NAME=VALUE`` (repeatable): the device timing's options (docs/evaluator.md,
    "Timing options"), checked against the timers' own parameters."""

    def parse(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
              ) -> dict[str, float]:
        if not values:
            return {}
        from jaxbench.evaluator import timing_option_names

        names = timing_option_names()
        out: dict[str, float] = {}
        for value in values:
            name, sep, number = value.partition("=")
            if not sep or name not in names:
                raise click.BadParameter(f"{value!r}: give NAME=VALUE with NAME one of "
                                         f"{', '.join(sorted(names))}")
            try:
                out[name] = int(number) if number.strip().lstrip("-").isdigit() else float(number)
            except ValueError:
                raise click.BadParameter(f"{value!r}: {number!r} is not a number") from None
            # a count of calls is a whole number, at least one (device_reps: 0 is the wall
            # clock alone); nothing is negative
            counted = name.endswith("reps") and name != "device_reps"
            if out[name] < (1 if counted else 0) or (counted and not isinstance(out[name], int)):
                raise click.BadParameter(f"{value!r}: {name} must be "
                                         f"{'a whole number >= 1' if counted else '>= 0'}")
        return out

    return click.option(
        "--timing", "timing", multiple=True, metavar="NAME=VALUE", callback=parse,
        help="A device timing option (repeatable), e.g. --timing min_reps=20 --timing "
             "reuse_reference=0; docs/evaluator.md lists them. Default: the evaluator's.")(command)


def task_file_option(command: F) -> F:
    """``--task-file FILE`` (repeatable): a task of one's own, outside the package."""
    return click.option(
        "--task-file", "task_files", multiple=True, metavar="FILE",
        type=click.Path(dir_okay=False, path_type=Path),
        help="A task of your own: a Python file defining TASK = Task(...) as a shipped task.py "
             "does (docs/tasks.md, \"Bring your own task\"); repeatable.")(command)


def load_task_files(paths: tuple[Path, ...] | list[Path], executor: str = "local"
                    ) -> list[tuple[str, str, str]]:
    """Loads each task file in this process (a usage error says why one cannot be used);
    returns (task ID, resolved path, SHA-256) per file, for the command and its run's config."""
    if not paths:
        return []
    if executor != "local":
        usage_error("--task-file runs with --executor local only (the Ray cluster's nodes "
                    "find tasks in their installed package)")
    from jaxbench.tasks import TaskFileError, load_task_file, task_file_of

    loaded = []
    for path in paths:
        try:
            task = load_task_file(path)
        except TaskFileError as exc:
            usage_error(str(exc))
        where, digest = task_file_of(task.id) or (str(path), "")
        loaded.append((task.id, where, digest))
    return loaded
