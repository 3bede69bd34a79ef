"""jaxbench: a benchmark, evaluation harness and optimizing agents for Pallas kernels.

Public API (fixed names, see docs/design.md)::

    jaxbench.get_task("8p_gemm")           # the Task
    jaxbench.list_tasks(suite="jaxbench")  # all tasks of a suite
    result = jaxbench.evaluate("kernel.py", "8p_gemm", target="tpu", size="small")
    result.status, result.speedup, result.to_event()  # an EvaluationResult
"""

from __future__ import annotations

import os

# Workers and the parent may share one accelerator: never let either grab it all.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from jaxbench._version import __version__


def __getattr__(name: str):  # noqa: ANN202 - PEP 562: importing jaxbench does not import JAX
    if name in ("get_task", "list_tasks"):
        import jaxbench.tasks

        return getattr(jaxbench.tasks, name)
    raise AttributeError(f"module 'jaxbench' has no attribute {name!r}")


def evaluate(source_or_path, task_id, **options):  # noqa: ANN001, ANN201
    """Evaluates a candidate kernel on a task; returns its
    :class:`~jaxbench.contract.EvaluationResult`."""
    from jaxbench.evaluator import evaluate as _evaluate

    return _evaluate(source_or_path, task_id, **options)


__all__ = ["__version__", "evaluate", "get_task", "list_tasks"]
