"""Task registry: every ``tasks/<suite>/<task id>/task.py`` that defines ``TASK``, and the
task files a command was given (``--task-file my_task.py``).

Adding a task is adding a folder named as its ID; no other file changes. Task IDs such as
``12p_rmsnorm`` are not Python identifiers, so a task folder is no package: its ``task.py`` is
loaded from its path (:func:`_load_module`, as a task file is), as the module
``jaxbench.tasks.<suite>._<task id>.task``.

A task file is a user's own task outside the package, in the same form as a shipped
``task.py``; :func:`load_task_file` registers it in the process that loads it. It is the
user's own code and runs where references run: in the command's process and in the trusted
runner, which is handed its path (and the SHA-256 of the text the command loaded) with each
request. The sandboxed tracer, which runs candidate code, never loads one: it gets input
shapes only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import threading
from functools import cache
from pathlib import Path
from types import ModuleType

from jaxbench.tasks.spec import Task

_ROOT = Path(__file__).parent


class UnknownTaskError(KeyError):
    """Raised for a task ID that no suite defines."""

    def __str__(self) -> str:
        return str(self.args[0])


def _sort_key(task: Task) -> tuple[str, int, str]:
    """Catalogue order: the suite, then ``meta["number"]`` or the ID's leading number
    (1p, 2p, ..., 17p, 18k, ...; not lexicographic), then the ID."""
    number = task.meta.get("number")
    if number is None:
        m = re.match(r"(\d+)", task.id)
        number = int(m.group(1)) if m else 10**9
    return (task.suite, int(number), task.id)


def _load_module(name: str, path: Path) -> ModuleType:
    """Executes the Python file ``path`` as the module ``name``, registered in ``sys.modules``
    first (dataclasses, pickling and ``inspect`` find a module by its name) and removed again
    when the file fails. The file's own exception propagates."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _shipped_module_name(suite: str, folder: str) -> str:
    """The stable, unique module name of a shipped ``task.py``: its folder is its task ID,
    which may start with a digit, hence the ``_`` (``jaxbench.tasks.jaxbench._12p_rmsnorm.task``)."""
    return f"jaxbench.tasks.{suite}._{folder}.task"


@cache
def _registry() -> dict[str, Task]:
    tasks: dict[str, Task] = {}
    for suite_dir in sorted(p for p in _ROOT.iterdir() if (p / "__init__.py").exists()):
        for folder in sorted(p for p in suite_dir.iterdir() if (p / "task.py").is_file()):
            module = _load_module(_shipped_module_name(suite_dir.name, folder.name),
                                  folder / "task.py")
            task: Task = module.TASK
            if task.id != folder.name:
                raise RuntimeError(f"task {task.id} is in the folder {folder}: a task's folder "
                                   "is named as its ID")
            task.folder = folder
            task.suite = suite_dir.name
            if not task.description:
                task.description = (module.__doc__ or "").strip()
            if task.id in tasks:
                raise RuntimeError(f"duplicate task id {task.id} in {folder}")
            tasks[task.id] = task
    return {t.id: t for t in sorted(tasks.values(), key=_sort_key)}


def list_tasks(suite: str | None = None) -> list[Task]:
    """All tasks, or those of one suite, in catalogue order."""
    tasks = list(_registry().values())
    if suite is not None:
        tasks = [t for t in tasks if t.suite == suite]
        if not tasks:
            raise UnknownTaskError(f"unknown suite {suite!r}; suites: {', '.join(suites())}")
    return tasks


def suites() -> list[str]:
    return sorted({t.suite for t in _registry().values()})


def get_task(task_id: str) -> Task:
    """The task with this ID (shipped, or from a task file loaded in this process); a one-line
    error naming `jaxbench tasks` otherwise."""
    try:
        return _registry()[task_id]
    except KeyError:
        if task_id in _FILE_TASKS:
            return _FILE_TASKS[task_id][0]
        close = similar_task_ids(task_id)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise UnknownTaskError(
            f"unknown task {task_id!r}{hint}; run `jaxbench tasks` to list the task IDs"
        ) from None


def similar_task_ids(task_id: str, limit: int = 3) -> list[str]:
    """Task IDs a mistyped one probably meant: same leading number (``8p`` -> ``8p_gemm``),
    the name without its number (``rmsnorm``), or a close spelling."""
    import difflib

    ids = list(_registry())
    wanted = task_id.strip().lower()
    if not wanted:
        return []
    by_number = [i for i in ids if i.lower().split("_", 1)[0] == wanted.split("_", 1)[0]]
    by_name = [i for i in ids if i.lower().split("_", 1)[-1] == wanted]
    close = difflib.get_close_matches(wanted, ids, n=limit, cutoff=0.6)
    found = list(dict.fromkeys(by_name + close + by_number))
    return found[:limit]


class TaskFileError(ValueError):
    """A task file that cannot be used (missing, failing to load, no ``TASK``, an ID taken):
    one line saying why."""


# Task files loaded in this process: task ID -> (task, resolved path, SHA-256 of its text).
_FILE_TASKS: dict[str, tuple[Task, str, str]] = {}
_FILE_LOCK = threading.Lock()
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
FILE_SUITE = "file"  # the suite of every task loaded from a task file


def load_task_file(path: str | Path, sha256: str | None = None) -> Task:
    """Loads a task file (a Python file that defines ``TASK = Task(...)``, as a shipped
    ``task.py`` does) and registers its task in this process: :func:`get_task` finds it by its
    ID from then on. ``sha256``: the text must be that one (the trusted runner checks it is
    judging the task the command loaded). Loading the same file again returns the same task.
    Raises :class:`TaskFileError`."""
    resolved = Path(path).expanduser().resolve()
    try:
        text = resolved.read_text()
    except OSError as exc:
        raise TaskFileError(f"task file {str(path)!r} cannot be read ({exc.strerror or exc})") from None
    digest = hashlib.sha256(text.encode()).hexdigest()
    if sha256 is not None and digest != sha256:
        raise TaskFileError(f"task file {resolved} changed after the run loaded it; rerun the "
                            "command (a run directory refuses another version of its task)")
    with _FILE_LOCK:
        for task, where, known in _FILE_TASKS.values():
            if where == str(resolved) and known == digest:
                return task
        name = f"jaxbench.tasks._file_{digest[:16]}"
        if importlib.util.spec_from_file_location(name, resolved) is None:
            raise TaskFileError(f"task file {resolved} is not a Python file")
        try:  # registered as `name`: the reference's helpers are found through it (prompts)
            module = _load_module(name, resolved)
        except Exception as exc:  # noqa: BLE001 - the user's code: any error is a message
            line = ""
            tb = exc.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == str(resolved):
                    line = f" (line {tb.tb_lineno})"
                tb = tb.tb_next
            detail = str(exc)
            if isinstance(exc, SyntaxError):
                line, detail = (f" (line {exc.lineno})" if exc.lineno else ""), str(exc.msg)
            raise TaskFileError(f"task file {resolved} failed to load{line}: "
                                f"{type(exc).__name__}: {detail}") from None
        task = getattr(module, "TASK", None)
        if not isinstance(task, Task):
            sys.modules.pop(name, None)
            raise TaskFileError(f"task file {resolved} defines no TASK = Task(...) (the form of a "
                                "shipped task.py: see docs/tasks.md)")
        if not isinstance(task.id, str) or not _TASK_ID.fullmatch(task.id):
            raise TaskFileError(f"task file {resolved}: the task ID {task.id!r} must be letters, "
                                "digits, '_', '.' or '-' (it names files in run directories)")
        if task.id in _registry():
            raise TaskFileError(f"task file {resolved}: {task.id!r} is a shipped task's ID; give "
                                "your task another")
        if task.id in _FILE_TASKS:
            raise TaskFileError(f"task file {resolved}: the ID {task.id!r} is already the task "
                                f"of {_FILE_TASKS[task.id][1]}")
        task.suite = FILE_SUITE
        task.folder = None  # no shipped kernels beside it
        if not task.description:
            task.description = (module.__doc__ or "").strip()
        _FILE_TASKS[task.id] = (task, str(resolved), digest)
        return task


def task_file_of(task_id: str) -> tuple[str, str] | None:
    """(path, SHA-256) of the task file that defined ``task_id`` in this process, or None for
    a shipped task: what a trusted process is handed to load the same task."""
    entry = _FILE_TASKS.get(task_id)
    return (entry[1], entry[2]) if entry is not None else None


def load_task(task_id: str, task_file: tuple[str, str] | list[str] | None = None) -> Task:
    """The task ``task_id``, loading ``task_file`` (path, SHA-256; from :func:`task_file_of`
    in another process) first when given: how the trusted runner finds a task file's task."""
    if task_file:
        path, digest = task_file
        task = load_task_file(path, digest)
        if task.id != task_id:
            raise TaskFileError(f"task file {path} defines {task.id!r}, not {task_id!r}")
        return task
    return get_task(task_id)


__all__ = ["FILE_SUITE", "Task", "TaskFileError", "UnknownTaskError", "get_task", "list_tasks",
           "load_task", "load_task_file", "suites", "task_file_of"]
