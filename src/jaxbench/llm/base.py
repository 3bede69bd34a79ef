"""The provider interface, the provider registry, completions and the price table.

A provider is a thin adapter over one SDK: it turns ``(prompt, sampling)`` into a
:class:`Completion`. Everything around it (retries, concurrency, cache,
recording) lives once in :mod:`jaxbench.llm.client`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


class LLMConfigError(RuntimeError):
    """A mistake the user can fix (unknown provider, missing key or SDK): one line, no retry."""


class LLMError(RuntimeError):
    """A model call that failed for good (after retries)."""


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters; part of the cache key."""

    temperature: float = 1.0
    max_tokens: int = 16384

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Completion:
    """One model answer with its accounting."""

    text: str
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    latency_s: float | None = None
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Provider:
    """One model behind one SDK. Subclasses set ``name`` and implement :meth:`complete`.

    ``spec`` is what follows ``PROVIDER:`` in the model spec. Constructors check the
    SDK and key up front and raise :class:`LLMConfigError` with a one-line fix.
    """

    name = ""
    #: offline providers (scripted, replay) skip the cache and the price table
    offline = False

    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        self.spec = spec
        self.model = spec
        self.timeout_s = timeout_s

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        raise NotImplementedError

    def is_retryable(self, exc: BaseException) -> bool:
        """Transient failures (rate limits, timeouts, 5xx) are retried; the rest are not."""
        status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
        if isinstance(status, int):
            return status == 408 or status == 429 or status >= 500
        return not isinstance(exc, (LLMConfigError, LLMError, TypeError, ValueError))


PROVIDERS: dict[str, type[Provider]] = {}


def register_provider(name: str) -> Callable[[type[Provider]], type[Provider]]:
    """Class decorator: makes a provider available as ``name:...`` in model specs."""

    def decorate(cls: type[Provider]) -> type[Provider]:
        cls.name = name
        PROVIDERS[name] = cls
        return cls

    return decorate


def import_sdk(module: str, extra: str, package: str | None = None) -> Any:
    """Imports an optional SDK, or says which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise LLMConfigError(f"the {extra} provider needs the {package or module} package: "
                             f"pip install 'jaxbench[{extra}]'") from None


def api_key(*names: str) -> str:
    """The first set environment variable of ``names``, or a one-line error naming them."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    raise LLMConfigError(f"set the {' or '.join(names)} environment variable to use this provider")


# US dollars per million tokens (input, output), list prices when written; edit freely.
# Matched by the longest prefix of the model name; unknown models cost None.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5": (1.25, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
}


def price(model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """Cost in dollars of one call, or None for a model not in the table (or no token counts)."""
    if input_tokens is None or output_tokens is None:
        return None
    matches = [p for p in PRICES_PER_MTOK if model.startswith(p)]
    if not matches:
        return None
    cost_in, cost_out = PRICES_PER_MTOK[max(matches, key=len)]
    return (input_tokens * cost_in + output_tokens * cost_out) / 1e6
