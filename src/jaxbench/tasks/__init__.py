"""Task registry: every ``tasks/<suite>/<folder>/task.py`` that defines ``TASK``.

Adding a task is adding a folder; no other file changes.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache
from pathlib import Path

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


@cache
def _registry() -> dict[str, Task]:
    tasks: dict[str, Task] = {}
    for suite_dir in sorted(p for p in _ROOT.iterdir() if (p / "__init__.py").exists()):
        for info in pkgutil.iter_modules([str(suite_dir)]):
            folder = suite_dir / info.name
            if not info.ispkg or not (folder / "task.py").exists():
                continue
            module = importlib.import_module(f"jaxbench.tasks.{suite_dir.name}.{info.name}.task")
            task: Task = module.TASK
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
    """The task with this ID; a one-line error naming `jaxbench tasks` otherwise."""
    try:
        return _registry()[task_id]
    except KeyError:
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


__all__ = ["Task", "UnknownTaskError", "get_task", "list_tasks", "suites"]
