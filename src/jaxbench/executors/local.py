"""The local executor: evaluations in worker processes on this host (the evaluator's own pools
of sandboxed tracers and trusted runners), and job functions run in this process."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxbench.evaluator import Evaluator


def make_evaluator(secret: bytes, spares: int = 1) -> Evaluator:
    """A :class:`~jaxbench.evaluator.Evaluator` for the run's ``secret``."""
    from jaxbench.evaluator import Evaluator

    return Evaluator(secret=secret, spares=spares)


def map_jobs(job: Callable[..., Any], args: list[tuple[Any, ...]],
             on_result: Callable[[Any], None] | None = None) -> list[Any]:
    """``job(*a)`` for each ``a`` in ``args``, one after another, in this process; results in
    the order of ``args``, each shown to ``on_result`` as it finishes."""
    results = []
    for a in args:
        results.append(job(*a))
        if on_result is not None:
            on_result(results[-1])
    return results


def abort_all() -> None:
    """Kills every tracer and runner process group this process started (Ctrl-C)."""
    import sys

    evaluator = sys.modules.get("jaxbench.evaluator")
    if evaluator is not None:  # nothing to kill when no evaluation ever started
        evaluator.kill_children()
