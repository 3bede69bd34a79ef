"""One evaluation's :class:`~jaxbench.contract.Settings` handed to an evaluator
(a local :class:`~jaxbench.evaluator.Evaluator`, a Ray one, a test's stand-in): the object
itself, ``evaluate(source, task_id, settings=...)`` (:func:`evaluate_with`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxbench.contract import EvaluationResult, Settings
    from jaxbench.executors.interface import SupportsEvaluate


def evaluate_with(evaluator: SupportsEvaluate, source: str | os.PathLike[str], task_id: str,
                  settings: Settings) -> EvaluationResult:
    """One evaluation of ``source`` on ``task_id`` with ``settings`` by ``evaluator`` (a local
    :class:`~jaxbench.evaluator.Evaluator`, a :class:`~jaxbench.executors.ray.RayEvaluator`,
    or anything with their ``evaluate``: :class:`~jaxbench.executors.interface.SupportsEvaluate`)."""
    return evaluator.evaluate(source, task_id, settings=settings)
