"""The evaluator: one candidate kernel through the staged protocol, across a trust boundary.

Code that ran beside a candidate is never trusted. ``static`` runs here
(parsing only). The untrusted side (:mod:`jaxbench.evaluator.sandbox`), a fresh
OS-isolated process with abstract shapes only, imports the candidate, traces
``kernel`` at every size the task defines and hands over one artefact, the traced
jaxprs as data (``jaxpr.pkl``, :mod:`jaxbench.evaluator.sandbox.handover`); from it
this process takes only that file and failure text. The trusted side
(:mod:`jaxbench.evaluator.judge`, warm runners that never import candidate code)
reads the hand-over as hostile data (:mod:`jaxbench.evaluator.judge.jaxpr_reader`:
allow-listed classes, JAX's own primitives by name), lowers the target and
interpret-mode modules from it itself, checks them and runs them on inputs it draws
from this process's keys; this process compares the outputs with the float32 truth
and computes every figure.

The package in four rooms, by who runs each file (docs/architecture.md):

- :mod:`jaxbench.evaluator.parent`, the calling process: the :class:`Evaluator`, each
  evaluation's phases and its verdict, the static policy, the tracer pool, the client of the
  trusted runners, the device lease, the float32 truth and the comparison, the timing
  figures;
- :mod:`jaxbench.evaluator.sandbox`, what runs beside candidate code (the tracer);
- :mod:`jaxbench.evaluator.judge`, the trusted side (reading the hand-over, lowering, every
  rule, the timers, the runner; on a device, the float32 truth beside the trials);
- :mod:`jaxbench.evaluator.common`, what more than one of them imports (the array files, the
  artifacts, the hand-over's vocabulary, the process helpers, exception and mask messages);

and two tools that join the sides on purpose: ``doctor`` (what this machine offers) and
``inprocess`` (every check in one process, for trusted kernels only).

Statuses, stages, rule codes, the records between the processes and :class:`Settings` are
the contract every package shares (:mod:`jaxbench.contract`); the face re-exports the few the
CLI needs. The CLI imports from here only (tests/test_architecture.py); other packages also
use the float32 truth (``parent.compare``) and the static checks.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """The face's names, each loaded on first use (PEP 562): importing a part of the evaluator
    (the tracer imports jaxbench.evaluator.common before it isolates itself) does not import
    the parent's machinery and JAX with it."""
    if name in ("Evaluator", "evaluate", "read_source", "probe_by_first_owner", "owner_depth"):
        from jaxbench.evaluator.parent import evaluator as module
    elif name in ("INTERPRET_RESIDUAL_RISK", "lowering_fidelity"):
        from jaxbench.evaluator.parent import chip_checks as module
    elif name == "SPEEDUP_REVIEW_THRESHOLD":
        from jaxbench.evaluator.parent import evaluation as module
    elif name in ("Settings", "StageFailure", "Status"):
        from jaxbench import contract as module
    elif name in ("declared_target", "target_declaration"):
        from jaxbench.evaluator.parent import static as module
    elif name == "resolve_case":
        from jaxbench.evaluator.parent import case as module
    elif name == "default_timeout":
        from jaxbench.evaluator.parent import timeouts as module
    elif name in ("diagnose", "require_seal", "Unsealed"):
        from jaxbench.evaluator import doctor as module
    elif name == "interpret_cost_problem":
        from jaxbench.evaluator.parent import cost as module
    elif name == "early_tracers":
        from jaxbench.evaluator.parent import pool as module
    elif name in ("HeldChip", "HoldError", "held_status", "stop_held"):
        from jaxbench.evaluator.parent import held as module
    elif name == "kill_children":
        from jaxbench.evaluator.common import procs as module
    elif name == "untrusted_text":
        from jaxbench.evaluator.parent import untrusted as module
    elif name == "timing_option_names":
        from jaxbench.evaluator.judge import timing as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


__all__ = [
    "INTERPRET_RESIDUAL_RISK",
    "SPEEDUP_REVIEW_THRESHOLD",
    "Evaluator",
    "HeldChip",
    "HoldError",
    "Settings",
    "StageFailure",
    "Status",
    "Unsealed",
    "declared_target",
    "resolve_case",
    "stop_held",
    "default_timeout",
    "diagnose",
    "early_tracers",
    "evaluate",
    "held_status",
    "interpret_cost_problem",
    "kill_children",
    "lowering_fidelity",
    "owner_depth",
    "probe_by_first_owner",
    "read_source",
    "require_seal",
    "target_declaration",
    "timing_option_names",
    "untrusted_text",
]
