"""The evaluators the executors make, as their callers use them: structural types
(:class:`typing.Protocol`), matched by shape. The local
:class:`~jaxbench.evaluator.Evaluator`, the :class:`~jaxbench.executors.ray.RayEvaluator` and
the tests' stand-ins all fit without inheriting anything.

Each protocol lists exactly what its callers call:

- :class:`SupportsEvaluate`: one evaluation (:func:`~jaxbench.executors.evaluate_with`);
- :class:`EvaluatorLike`: what :func:`~jaxbench.executors.make_evaluator` gives and a run's
  jobs or ``jaxbench serve`` drive, evaluations from many threads at once, then ``abort``
  (Ctrl-C, a stopping service) and ``close``;
- :class:`SupportsResolveMode` and :class:`SupportsClusterSlots`: an evaluator whose
  evaluations run on a cluster resolves ``auto`` there, and says how many it runs at once.
  The local evaluator has neither method; callers tell the two apart with ``isinstance``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from jaxbench.contract import EvaluationResult, Settings


class SupportsEvaluate(Protocol):
    """Evaluates one kernel (a source text or a file's path) on a task with ``settings``,
    and returns its result."""

    def evaluate(self, source_or_path: str | os.PathLike[str], task_id: str, /, *,
                 settings: Settings) -> EvaluationResult: ...


class EvaluatorLike(SupportsEvaluate, Protocol):
    """An executor's evaluator: evaluations from many threads at once; :meth:`abort` stops
    those in flight (their callers discard them), :meth:`close` releases its processes."""

    def abort(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class SupportsResolveMode(Protocol):
    """Resolves a requested mode (``auto``, ``interpret``, ``device``) for a target where its
    evaluations run (a Ray cluster), not on this host."""

    def resolve_mode(self, mode: str, target: str) -> str: ...


@runtime_checkable
class SupportsClusterSlots(SupportsResolveMode, Protocol):
    """Also says how many evaluations run at once in a resolved mode for a target."""

    def slots(self, mode: str, target: str) -> int: ...


__all__ = ["EvaluatorLike", "SupportsClusterSlots", "SupportsEvaluate", "SupportsResolveMode"]
