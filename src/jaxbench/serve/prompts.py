"""The tasks as a service lists them, with the prompt the optimizing agents build for each
(the task statement of :mod:`jaxbench.agents.prompts` and the answer format)."""

from __future__ import annotations

from functools import lru_cache

from jaxbench.agents.prompts import ANSWER_FORMAT, PROMPT_MODES, task_statement
from jaxbench.serve.wire import TaskSummary
from jaxbench.tasks import Task, get_task, list_tasks


def task_summary(task: Task) -> TaskSummary:
    """A task's identity: suite, sizes, the targets it ships seed kernels for, tolerances."""
    kernels = sorted(task.kernel_files())
    targets = sorted({target for kind, target in kernels if kind == "seed"}) or ["tpu", "gpu"]
    description = (task.description or "").strip().splitlines()
    return {"id": task.id, "suite": task.suite, "description": description[0] if description else "",
            "sizes": list(task.sizes), "targets": targets, "atol": task.atol, "rtol": task.rtol}


@lru_cache(maxsize=1024)
def task_prompt(task_id: str, target: str, size: str = "small", mode: str = "interpret",
                prompt_mode: str = "default") -> str:
    """The prompt an agent gets for the task: its statement (reference, shapes at every size,
    profile, contract) and the answer format. KeyError/ValueError for unknown settings."""
    if target not in ("tpu", "gpu"):
        raise ValueError(f"unknown target {target!r}; use tpu or gpu")
    if prompt_mode not in PROMPT_MODES:
        raise ValueError(f"unknown prompt mode {prompt_mode!r}; use {' or '.join(PROMPT_MODES)}")
    task = get_task(task_id)
    task.dims(size)
    return f"{task_statement(task, target, size, mode, prompt_mode=prompt_mode)}\n\n{ANSWER_FORMAT}"


def seed_source(task_id: str, target: str) -> str | None:
    """The task's shipped seed kernel for ``target`` (a starting point), or None."""
    path = get_task(task_id).kernel_files().get(("seed", target))
    return path.read_text() if path is not None else None


def tasks(suite: str | None = None) -> list[Task]:
    return list_tasks(suite) if suite else list_tasks()


__all__ = ["seed_source", "task_prompt", "task_summary", "tasks"]
