"""Model clients. A model spec is ``PROVIDER:MODEL``:

- ``openai:gpt-5``, ``openai:my-model@http://localhost:8000/v1`` (vLLM, SGLang, hosted)
- ``gemini:gemini-2.5-pro``
- ``anthropic:claude-sonnet-4-5``
- ``scripted:DIR`` (the files of DIR as successive answers; the test double)
- ``replay:FILE`` (a ``--record`` file played back offline)

Provider modules are cheap to import; each SDK is imported only when its provider
is used, and a missing SDK or key is a one-line :class:`LLMConfigError`.
"""

from __future__ import annotations

from pathlib import Path

from jaxbench.llm import anthropic_messages, gemini, openai_compatible, replay, scripted  # noqa: F401
from jaxbench.llm.base import (
    PRICES_PER_MTOK,
    PROVIDERS,
    REASONING_EFFORTS,
    Completion,
    LLMCancelled,
    LLMConfigError,
    LLMError,
    LLMRequestError,
    Provider,
    Sampling,
    price,
    register_provider,
)
from jaxbench.llm.client import ModelClient


def get_model(spec: str, *, sampling: Sampling | None = None, timeout_s: float = 600.0,
              max_concurrency: int = 8, retries: int = 5, cache_dir: str | Path | None = None,
              record: str | Path | None = None,
              price_override: tuple[float, float] | None = None) -> ModelClient:
    """A :class:`ModelClient` for ``PROVIDER:MODEL``; raises :class:`LLMConfigError` on a bad spec."""
    name, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise LLMConfigError(f"model spec {spec!r} is not PROVIDER:MODEL "
                             f"(providers: {', '.join(sorted(PROVIDERS))})")
    if name not in PROVIDERS:
        raise LLMConfigError(f"unknown model provider {name!r} in {spec!r}; "
                             f"use one of {', '.join(sorted(PROVIDERS))}")
    provider = PROVIDERS[name](rest, timeout_s=timeout_s)
    if sampling is not None:
        provider.check_sampling(sampling)
    return ModelClient(provider, spec, sampling=sampling, max_concurrency=max_concurrency,
                       retries=retries, cache_dir=cache_dir, record=record,
                       price_override=price_override)


__all__ = [
    "PRICES_PER_MTOK", "PROVIDERS", "REASONING_EFFORTS", "Completion", "LLMCancelled", "LLMConfigError",
    "LLMError",
    "LLMRequestError", "ModelClient", "Provider", "Sampling", "get_model", "price", "register_provider",
]
