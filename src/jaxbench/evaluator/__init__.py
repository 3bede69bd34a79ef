"""The evaluator: one candidate kernel through the staged protocol, across a trust boundary.

Code that ran beside a candidate is never trusted. ``static`` runs here
(parsing only). The untrusted side (:mod:`jaxbench.evaluator.sandbox`), a fresh
OS-isolated process with abstract shapes only, imports the candidate, traces
``kernel`` once and exports that trace; from it this process takes only the
export bytes and failure text. The trusted side (:mod:`jaxbench.evaluator.judge`,
warm runners that never import candidate code) checks the exported module's
structure and runs exactly that module on inputs drawn there; this process
compares the outputs with the float32 truth and computes every figure.

The package in three parts:

- the parent, this process: :mod:`~jaxbench.evaluator.parent.evaluator` (the :class:`Evaluator`
  and its staged protocol) and :mod:`~jaxbench.evaluator.parent.untrusted` (reading and cleaning
  what the tracer left), with the stages' helpers beside them (``static``, ``compare``,
  ``timing``, ``pool``, ``result``, ...) and ``doctor`` (what this machine offers);
- :mod:`jaxbench.evaluator.sandbox`, the untrusted side;
- :mod:`jaxbench.evaluator.judge`, the trusted side.

The CLI imports from here only (tests/test_architecture.py); other packages also use the
result record (``result``), the float32 truth (``compare``) and the static checks.
"""

from __future__ import annotations

from jaxbench.evaluator.common.schema import StageFailure
from jaxbench.evaluator.doctor import diagnose
from jaxbench.evaluator.parent.cost import interpret_cost_problem
from jaxbench.evaluator.parent.evaluator import (
    INTERPRET_RESIDUAL_RISK,
    SPEEDUP_REVIEW_THRESHOLD,
    Evaluator,
    evaluate,
    kill_children,
    lowering_fidelity,
    read_source,
)
from jaxbench.evaluator.parent.static import declared_target, target_declaration
from jaxbench.evaluator.parent.timeouts import default_timeout
from jaxbench.evaluator.parent.untrusted import untrusted_text

__all__ = [
    "INTERPRET_RESIDUAL_RISK",
    "SPEEDUP_REVIEW_THRESHOLD",
    "Evaluator",
    "StageFailure",
    "declared_target",
    "default_timeout",
    "diagnose",
    "evaluate",
    "interpret_cost_problem",
    "kill_children",
    "lowering_fidelity",
    "read_source",
    "target_declaration",
    "untrusted_text",
]
