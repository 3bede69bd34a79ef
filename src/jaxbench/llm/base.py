"""The provider interface, the provider registry, completions and the price table.

A provider is a thin adapter over one SDK: it turns ``(prompt, sampling)`` into a
:class:`Completion`. Everything around it (retries, concurrency, cache,
recording) lives once in :mod:`jaxbench.llm.client`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict, cast


class LLMConfigError(RuntimeError):
    """A mistake the user can fix (unknown provider, missing key or SDK): one line, no retry."""


class LLMError(RuntimeError):
    """A model call that failed for good (after retries): the run stops (resume retries it)."""


class LLMCancelled(LLMError):
    """The run was stopped (Ctrl-C): no request starts any more, and a call still waiting for
    its answer is abandoned (its connection closes when the process exits). ``sent``: a
    request of this call had gone out (its cost is unknown), else none did."""

    def __init__(self, message: str, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class LLMRequestError(LLMError):
    """The provider refused this one request for good (a 4xx such as context too long or an
    unsupported parameter): the sample fails, the run goes on, and resume does not repeat it."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")


class SamplingFields(TypedDict):
    """:class:`Sampling` as a JSON object (:meth:`Sampling.as_dict`: the cache key's and the
    recorded exchange's ``sampling``)."""

    temperature: float | None
    max_tokens: int
    reasoning_effort: str | None
    thinking_budget: int | None
    seed: int | None


class CompletionFields(TypedDict):
    """:class:`Completion` as a JSON object (:meth:`Completion.as_dict`: a cached answer's
    file, read back into a :class:`Completion`)."""

    text: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    cost: float | None
    latency_s: float | None
    cached: bool
    finish_reason: str | None
    extra: dict[str, int | float | str | None]


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters; part of the cache key.

    ``temperature`` None leaves the provider's default. ``reasoning_effort`` and
    ``thinking_budget`` (tokens) are the reasoning controls, mapped per SDK: OpenAI's
    ``reasoning_effort``; Anthropic's ``output_config.effort`` and extended thinking with
    ``budget_tokens``; Gemini's ``thinking_config`` (``thinking_level``, ``thinking_budget``).
    """

    temperature: float | None = None
    max_tokens: int = 16384
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    #: the run's seed (``--seed``): providers that accept a seed get one per call, derived from
    #: it and the call's sample id (repeated draws of one prompt must still differ)
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"reasoning effort {self.reasoning_effort!r}: use one of "
                             f"{', '.join(REASONING_EFFORTS)}")

    def as_dict(self) -> SamplingFields:
        return cast(SamplingFields, asdict(self))

    def call_seed(self, sample: str) -> int | None:
        """The seed one call sends (None without ``--seed``): a 31-bit hash of the run's seed
        and the call's sample id."""
        if self.seed is None:
            return None
        digest = hashlib.sha256(f"{self.seed}/{sample}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class Completion:
    """One model answer with its accounting."""

    text: str
    model: str
    #: every input token of the call, cached ones included (the same meaning for every provider)
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: of ``input_tokens``, those the provider read from its prompt cache (OpenAI
    #: ``prompt_tokens_details.cached_tokens``, Anthropic ``cache_read_input_tokens``, Gemini
    #: ``cached_content_token_count``); None when the provider does not say
    cached_input_tokens: int | None = None
    cost: float | None = None
    latency_s: float | None = None
    cached: bool = False
    #: why the model stopped: "stop" (it finished), "length" (cut off at max_tokens), or the
    #: provider's own word for anything else ("content_filter", "safety", ...); None if unknown
    finish_reason: str | None = None
    #: the provider's own figures (e.g. Anthropic's ``cache_creation_input_tokens``)
    extra: dict[str, int | float | str | None] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def as_dict(self) -> CompletionFields:
        return cast(CompletionFields, asdict(self))


class Provider:
    """One model behind one SDK. Subclasses set ``name`` and implement :meth:`complete`.

    ``spec`` is what follows ``PROVIDER:`` in the model spec. Constructors check the
    SDK and key up front and raise :class:`LLMConfigError` with a one-line fix.

    The prompt may carry ``fixed`` (an int attribute, as the agents' prompts do): the length of
    its prefix shared by every call of the task and method. A provider with explicit cache
    breakpoints (Anthropic) marks that prefix; the others cache common prefixes on their own.
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

    def cancel(self) -> None:
        """The run stops: end what can be ended of the calls in flight (best effort; the SDKs'
        synchronous calls cannot be interrupted from another thread, and their connections
        close when the process exits)."""
        close = getattr(getattr(self, "client", None), "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # noqa: BLE001 - a stop must never fail
                pass

    def check_sampling(self, sampling: Sampling) -> None:
        """Raises :class:`LLMConfigError` for settings this provider cannot send."""

    def is_retryable(self, exc: BaseException) -> bool:
        """Transient failures (rate limits, timeouts, 5xx) are retried; the rest are not."""
        status = status_code(exc)
        if status is not None:
            return status in (408, 409, 425, 429) or status >= 500
        return not isinstance(exc, (LLMConfigError, LLMError, TypeError, ValueError))


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an SDK error (``status_code`` in OpenAI/Anthropic, ``code`` in Gemini)."""
    for name in ("status_code", "code", "status"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    return None


# Refusals that concern every request of the run (bad key, no access, no such model): the run
# stops with the message instead of failing every sample.
FATAL_STATUSES = (401, 402, 403, 404)


def retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (``Retry-After`` / ``retry-after-ms`` headers)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except Exception:  # noqa: BLE001 - an unusual headers object
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            import time

            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


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


# US dollars per million tokens (input, output): list prices when written (standard tier,
# prompts under 200k tokens); edit freely, or override per run with --price IN,OUT.
# A model is priced only by its exact name, optionally followed by a release date
# ("-2025-08-07", "-20250929") or "-latest", and after a "models/" prefix: a variant that
# is not listed ("gpt-5-pro", "claude-opus-4-5") is unpriced, never priced as its family.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-codex": (1.25, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4-5": (5.00, 25.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
}
_VARIANT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def price_key(model: str) -> str:
    """The price-table name of a model: without a "models/" prefix or a release-date suffix."""
    name = model.removeprefix("models/")
    return _VARIANT_SUFFIX.sub("", name)


def price(model: str, input_tokens: int | None, output_tokens: int | None,
          override: tuple[float, float] | None = None) -> float | None:
    """Cost in dollars of one call, or None for a model not in the table (or no token counts).
    ``override`` (dollars per million input and output tokens) replaces the table."""
    if input_tokens is None or output_tokens is None:
        return None
    rates = override or PRICES_PER_MTOK.get(price_key(model))
    if rates is None:
        return None
    cost_in, cost_out = rates
    return (input_tokens * cost_in + output_tokens * cost_out) / 1e6
