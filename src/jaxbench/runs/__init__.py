"""Run directories and what fills them.

- ``directory.py``: a run directory: ``manifest.json`` plus an append-only ``events.jsonl``,
  every evaluated kernel source and, for optimize runs, ``best/<task>.py``. The secret the
  trial inputs derive from is never on disk: each segment of a run (its start, each resume)
  holds a fresh one in memory, commits to it (the manifest and its ``run_start`` event) and
  reveals it in the ``run_end`` that closes the segment (an interrupt's too);
  ``audit_secret`` / ``verify_secret`` check every reveal against its commitment; a replay
  run (``Replay``, `jaxbench run --replay DIR`) uses the secret an ended run revealed instead,
  to draw that run's inputs again;
- ``jobs.py``: evaluating jobs (shipped kernels, a directory of kernels) into a run
  directory (``jaxbench run``), recording the run's plan (its job keys) in the manifest.
  Its names are offered here too, imported on first use: it imports the task registry and
  JAX, which reading a run directory does not need.
"""

from __future__ import annotations

from typing import Any

from jaxbench.runs.directory import (
    EVENTS,
    MANIFEST,
    Replay,
    RunDir,
    RunError,
    SecretAudit,
    audit_secret,
    best_evaluations,
    event_source,
    read_events,
    read_plan,
    replay_secret,
    verify_secret,
    write_best,
)

_JOBS_NAMES = ("Job", "KNOWN_INTERPRET_FAILURES", "SHIPPED_KINDS", "default_workers",
               "directory_jobs", "finished_keys", "kernel_unavailable", "known_limitation",
               "plan_jobs", "run_jobs", "select_tasks", "shipped_jobs")


def __getattr__(name: str) -> Any:  # PEP 562: the jobs module's names, imported on first use
    if name in _JOBS_NAMES:
        from jaxbench.runs import jobs

        return getattr(jobs, name)
    raise AttributeError(f"module 'jaxbench.runs' has no attribute {name!r}")


__all__ = ["EVENTS", "KNOWN_INTERPRET_FAILURES", "MANIFEST", "SHIPPED_KINDS", "Job", "Replay",
           "RunDir", "RunError", "SecretAudit", "audit_secret", "best_evaluations", "default_workers",
           "directory_jobs", "event_source", "finished_keys", "kernel_unavailable",
           "known_limitation", "plan_jobs", "read_events", "read_plan", "replay_secret", "run_jobs",
           "select_tasks", "shipped_jobs", "verify_secret", "write_best"]
