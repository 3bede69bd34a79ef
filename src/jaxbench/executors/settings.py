"""One evaluation's :class:`~jaxbench.evaluator.common.schema.Settings` handed to an evaluator
(a local :class:`~jaxbench.evaluator.Evaluator`, a Ray one, a test's stand-in): the object
itself, ``evaluate(source, task_id, settings=...)`` (:func:`evaluate_with`); keyword options
convert to and from it for callers that still pass keywords."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxbench.evaluator.common.schema import Settings


def settings_options(settings: Settings) -> dict[str, Any]:
    """:meth:`jaxbench.evaluator.Evaluator.evaluate`'s keyword options for ``settings`` (its
    fields by name; ``timing`` as a dict)."""
    options = dataclasses.asdict(settings)
    options["timing"] = settings.timing_options()
    return options


def settings_of(options: dict[str, Any]) -> Settings:
    """The :class:`Settings` of keyword options (the inverse of :func:`settings_options`; an
    unknown name is a TypeError)."""
    from jaxbench.evaluator.common.schema import Settings

    return Settings.of(**{**options, "timing": options.get("timing") or {}})


def evaluate_with(evaluator: Any, source: str | os.PathLike[str], task_id: str,
                  settings: Settings) -> dict[str, Any]:
    """One evaluation of ``source`` on ``task_id`` with ``settings`` by ``evaluator`` (a local
    :class:`~jaxbench.evaluator.Evaluator`, a :class:`~jaxbench.executors.ray.RayEvaluator`,
    or anything with their ``evaluate``)."""
    return evaluator.evaluate(source, task_id, settings=settings)
