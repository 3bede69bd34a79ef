"""Optimizing agents: methods that spend a sample budget of LLM-written kernels per task.

Methods (one module each, registered by name): ``best_of_n``, ``iterative``,
``autocomp``, ``evolve``. :func:`optimize` runs one method over tasks into a run
directory; ``jaxbench optimize`` is its command line.
"""

from __future__ import annotations

from jaxbench.agents import autocomp, best_of_n, evolve, iterative  # noqa: F401  (registration)
from jaxbench.agents.base import (
    METHODS,
    Budget,
    Candidate,
    CandidateError,
    Context,
    Method,
    register_method,
)
from jaxbench.agents.driver import DEFAULT_BUDGET, Interrupted, get_method, optimize

__all__ = [
    "DEFAULT_BUDGET", "METHODS", "Budget", "Candidate", "CandidateError", "Context", "Interrupted",
    "Method", "get_method", "optimize", "register_method",
]
