"""The task validator: is each task a meaningful, fairly-toleranced benchmark problem?

The checks (finite, non-constant, every input matters, tolerance calibration) and what each
one measures are described in :mod:`jaxbench.validation.checks`; ``jaxbench validate`` runs
them over a suite. Tasks are data and import nothing from here.
"""

from __future__ import annotations

from jaxbench.validation.checks import (
    Check,
    InputResult,
    TaskReport,
    error_report,
    validate_one,
    validate_task,
)

__all__ = ["Check", "InputResult", "TaskReport", "error_report", "validate_one", "validate_task"]
