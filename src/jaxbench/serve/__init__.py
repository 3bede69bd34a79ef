"""The judge as a service (``jaxbench serve``, the ``serve`` extra: FastAPI on uvicorn).

One module per concern:

- ``service.py``: submissions, the queue, workers over an executor's evaluator, the verdict
  cache, idempotent ids, waking waiters (no HTTP), made of ``admission.py``, ``state.py`` (the
  one owner of the state, kept in ``ledger.py``), ``workers.py`` and ``waiting.py``; its
  docstring says who owns which state and which lock guards it;
- ``store.py``: the run directory behind it (what ``jaxbench report`` / ``export`` read; what a
  restart resumes from);
- ``app.py``: the HTTP API and its guard (request size, bearer tokens); ``server.py``: uvicorn;
- ``auth.py``: tokens; ``limits.py``: quotas and concurrency; ``metrics.py``: Prometheus;
- ``rewards.py``: verdict to reward (the table users can change);
- ``prompts.py``: the tasks and their prompts;
- ``client.py``: :class:`Client` and :class:`AsyncClient`; ``wire.py``: the API's bodies as
  typed records (:class:`SubmissionReply` holds its verdict's
  :class:`~jaxbench.contract.EvaluationResult`);
- ``environment.py``: the OpenEnv environment and its client (the ``openenv`` extra);
- ``trainer.py``: reward functions for TRL and verl.

Names that need the extra (FastAPI, uvicorn, httpx) are imported on first use, so the
package's face imports without it.
"""

from __future__ import annotations

from typing import Any

from jaxbench.serve.auth import TOKENS_ENV, Authenticator, Principal, TokenError, load_tokens
from jaxbench.serve.rewards import DEFAULT_TABLE, INTERPRET_NOTE, RewardTable, reward
from jaxbench.serve.service import Request, ServeConfig, ServeError, Service
from jaxbench.serve.wire import BatchReply, SubmissionReply

_LAZY = {
    "create_app": "jaxbench.serve.app",
    "run_server": "jaxbench.serve.server",
    "ServeSetupError": "jaxbench.serve.server",
    "Client": "jaxbench.serve.client",
    "AsyncClient": "jaxbench.serve.client",
    "ServeClientError": "jaxbench.serve.client",
    "KernelReward": "jaxbench.serve.trainer",
    "compute_score": "jaxbench.serve.trainer",
    "JaxbenchEnvironment": "jaxbench.serve.environment",
    "JaxbenchEnvClient": "jaxbench.serve.environment",
    "JaxbenchAction": "jaxbench.serve.environment",
    "JaxbenchObservation": "jaxbench.serve.environment",
}


def __getattr__(name: str) -> Any:  # PEP 562: what needs the serve extra, on first use
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'jaxbench.serve' has no attribute {name!r}")


def missing_extra() -> str | None:
    """The serve extra's missing package, or None when FastAPI, uvicorn and httpx import."""
    import importlib.util

    for module in ("fastapi", "uvicorn", "httpx"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


__all__ = ["DEFAULT_TABLE", "INTERPRET_NOTE", "TOKENS_ENV", "AsyncClient", "Authenticator", "BatchReply",
           "Client", "JaxbenchAction", "JaxbenchEnvClient", "JaxbenchEnvironment", "JaxbenchObservation",
           "KernelReward", "Principal", "Request", "RewardTable", "ServeClientError", "ServeConfig",
           "ServeError", "ServeSetupError", "Service", "SubmissionReply", "TokenError", "compute_score",
           "create_app", "load_tokens", "missing_extra", "reward", "run_server"]
