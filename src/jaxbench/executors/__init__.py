"""Where work runs: ``local`` (worker processes on this host) or ``ray`` (a Ray cluster).

An executor runs what it is handed and knows nothing of what the work means:

- :func:`make_evaluator` gives an object with :class:`jaxbench.evaluator.Evaluator`'s
  interface (``evaluate``, ``abort``, ``close``: :class:`EvaluatorLike`), so the runner, the
  optimizing agents and their resume logic do not change with the executor, only where each
  ``evaluate`` runs; the caller alone appends results to the run's events;
- :func:`map_jobs` runs any module-level job function over a list of arguments (the task
  validator hands it its per-task check);
- :func:`evaluate_with` is how every caller (the runs' jobs, the agents, ``jaxbench serve``)
  hands one evaluation's :class:`~jaxbench.contract.Settings` to such an
  evaluator: the object itself, ``evaluate(source, task, settings=...)``.

``local.py`` and ``ray.py`` hold one executor each; ``errors.py`` the errors both raise;
``interface.py`` the protocols that type their evaluators where callers receive one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from jaxbench.executors.errors import EvaluationLost, ExecutorError
from jaxbench.executors.interface import (
    EvaluatorLike,
    SupportsClusterSlots,
    SupportsEvaluate,
    SupportsResolveMode,
)
from jaxbench.executors.settings import evaluate_with

EXECUTORS = ("local", "ray")
def _known(executor: str, ray_address: str | None) -> None:
    if executor not in EXECUTORS:
        raise ExecutorError(f"unknown executor {executor!r}; use local or ray")
    if executor == "local" and ray_address:
        raise ExecutorError("--ray-address needs --executor ray")


def check_executor(executor: str, ray_address: str | None, mode: str,
                   targets: Iterable[str]) -> dict[str, str] | None:
    """Before a command opens its run: connects to the Ray cluster and checks that it can run
    ``mode`` for every target (a one-line :class:`ExecutorError` otherwise). Returns the mode
    each target resolves to on the cluster (``None`` for the local executor, whose modes
    resolve on this host)."""
    _known(executor, ray_address)
    if executor == "local":
        return None
    from jaxbench.executors.ray import cluster_accelerators, connect, resolve_cluster_mode

    cluster = cluster_accelerators(connect(ray_address))
    modes = {}
    for target in sorted(set(targets)):
        try:
            modes[target] = resolve_cluster_mode(mode, target, cluster)
        except RuntimeError as exc:
            raise ExecutorError(str(exc)) from None
    return modes


def make_evaluator(executor: str, secret: bytes, *, spares: int = 1, ray_address: str | None = None,
                   max_retries: int | None = None) -> EvaluatorLike:
    """A local :class:`~jaxbench.evaluator.Evaluator`, or a
    :class:`~jaxbench.executors.ray.RayEvaluator` connected to the cluster at ``ray_address``."""
    _known(executor, ray_address)
    if executor == "local":
        from jaxbench.executors import local

        return local.make_evaluator(secret, spares)
    from jaxbench.executors.ray import DEFAULT_MAX_RETRIES, RayEvaluator

    return RayEvaluator(secret, ray_address,
                        max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries)


def map_jobs(executor: str, job: Callable[..., Any], args: list[tuple[Any, ...]], *,
             ray_address: str | None = None,
             on_result: Callable[[Any], None] | None = None) -> list[Any]:
    """``job(*a)`` for each ``a`` in ``args``: here, one after another, or as one Ray task each
    (``job`` must then be a module-level function the nodes can import). Results come back in
    the order of ``args``; ``on_result`` sees each as it finishes."""
    _known(executor, ray_address)
    if executor == "local":
        from jaxbench.executors import local

        return local.map_jobs(job, args, on_result)
    from jaxbench.executors import ray

    return ray.map_jobs(job, args, ray_address, on_result)


def stop_all() -> None:
    """Ctrl-C: stops every evaluation this process has in flight, wherever it runs: the Ray
    tasks are cancelled (their workers killed) and the local tracers' and runners' process
    groups are killed. Nothing happens for an executor that was never used."""
    ray = sys.modules.get("jaxbench.executors.ray")
    if ray is not None:
        ray.abort_all()
    from jaxbench.executors import local

    local.abort_all()


def cluster_slots(evaluator: object, mode: str, targets: Iterable[str]) -> int | None:
    """Evaluations a Ray evaluator's cluster runs at once for these targets (``None`` for a
    local evaluator, one without :class:`SupportsClusterSlots`'s methods: the caller's own
    default applies)."""
    if not isinstance(evaluator, SupportsClusterSlots):
        return None
    resolved = {t: evaluator.resolve_mode(mode, t) for t in sorted(set(targets)) or ["tpu"]}
    devices = sum(evaluator.slots(m, t) for t, m in resolved.items() if m == "device")
    # interpret-mode evaluations of every target share the cluster's CPUs
    return devices + (evaluator.slots("interpret", "tpu") if "interpret" in resolved.values() else 0)


__all__ = ["EXECUTORS", "EvaluationLost", "EvaluatorLike", "ExecutorError", "SupportsClusterSlots",
           "SupportsEvaluate", "SupportsResolveMode", "check_executor", "cluster_slots",
           "evaluate_with", "make_evaluator", "map_jobs", "stop_all"]
