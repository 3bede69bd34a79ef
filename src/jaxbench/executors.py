"""Where evaluations run: ``local`` (worker processes on this host) or ``ray`` (a Ray cluster).

Both give an object with :class:`jaxbench.evaluator.Evaluator`'s interface (``evaluate``,
``abort``, ``close``), so the runner, the optimizing agents and their resume logic do not
change with the executor: only where each ``evaluate`` runs does. The caller (the driver)
alone appends results to the run's events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from jaxbench.executor_errors import EvaluationLost, ExecutorError

EXECUTORS = ("local", "ray")
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


def check_executor(executor: str, ray_address: str | None, mode: str,
                   targets: Iterable[str]) -> dict[str, str] | None:
    """Before a command opens its run: connects to the Ray cluster and checks that it can run
    ``mode`` for every target (a one-line :class:`ExecutorError` otherwise). Returns the mode
    each target resolves to on the cluster (``None`` for the local executor, whose modes
    resolve on this host)."""
    if executor not in EXECUTORS:
        raise ExecutorError(f"unknown executor {executor!r}; use local or ray")
    if executor == "local":
        if ray_address:
            raise ExecutorError("--ray-address needs --executor ray")
        return None
    from jaxbench.ray_executor import cluster_accelerators, connect, resolve_cluster_mode

    cluster = cluster_accelerators(connect(ray_address))
    modes = {}
    for target in sorted(set(targets)):
        try:
            modes[target] = resolve_cluster_mode(mode, target, cluster)
        except RuntimeError as exc:
            raise ExecutorError(str(exc)) from None
    return modes


def abort_all() -> None:
    """Ctrl-C: cancels the Ray evaluations in flight in this process (nothing when Ray was
    never used)."""
    import sys

    module = sys.modules.get("jaxbench.ray_executor")
    if module is not None:
        module.abort_all()


def make_evaluator(executor: str, secret: bytes, *, spares: int = 1, ray_address: str | None = None,
                   max_retries: int | None = None) -> Any:
    """A local :class:`~jaxbench.evaluator.Evaluator`, or a
    :class:`~jaxbench.ray_executor.RayEvaluator` connected to the cluster at ``ray_address``."""
    if executor == "local":
        if ray_address:
            raise ValueError("--ray-address needs --executor ray")
        from jaxbench.evaluator import Evaluator

        return Evaluator(secret=secret, spares=spares)
    if executor == "ray":
        from jaxbench.ray_executor import DEFAULT_MAX_RETRIES, RayEvaluator

        return RayEvaluator(secret, ray_address,
                            max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries)
    raise ValueError(f"unknown executor {executor!r}; use local or ray")


def cluster_slots(evaluator: Any, mode: str, targets: Iterable[str]) -> int | None:
    """Evaluations a Ray evaluator's cluster runs at once for these targets (``None`` for a
    local evaluator: the caller's own default applies)."""
    slots = getattr(evaluator, "slots", None)
    if slots is None:
        return None
    resolved = {t: evaluator.resolve_mode(mode, t) for t in sorted(set(targets)) or ["tpu"]}
    devices = sum(slots(m, t) for t, m in resolved.items() if m == "device")
    # interpret-mode evaluations of every target share the cluster's CPUs
    return devices + (slots("interpret", "tpu") if "interpret" in resolved.values() else 0)


__all__ = ["EXECUTORS", "EvaluationLost", "ExecutorError", "abort_all", "check_executor",
           "cluster_slots", "executor_options", "make_evaluator"]
