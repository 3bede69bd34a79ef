"""The model client every method talks to: one provider plus retries, a concurrency
limit, an on-disk response cache, cost accounting and an optional JSONL recording.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import threading
from pathlib import Path
from typing import TypedDict

from jaxbench.llm.base import (
    FATAL_STATUSES,
    Completion,
    LLMCancelled,
    LLMConfigError,
    LLMError,
    LLMRequestError,
    Provider,
    Sampling,
    SamplingFields,
    price,
    retry_after,
    status_code,
)

MAX_WAIT_S = 300.0


class Exchange(TypedDict):
    """One line of a recording (``record_path``; :mod:`jaxbench.llm.replay` answers from it):
    the model spec, the call's sample id and run, the prompt and its SHA-256, the sampling,
    and the answer with its model, tokens, cost and why the model stopped."""

    spec: str
    sample: str
    run: str
    prompt_sha256: str
    sampling: SamplingFields
    prompt: str
    response: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    cost: float | None
    finish_reason: str | None


def prompt_sha256(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()


class ModelClient:
    """Calls one model.

    Args:
        provider: the adapter that reaches the model.
        spec: the ``PROVIDER:MODEL`` string (recorded with every exchange).
        sampling: default sampling parameters.
        max_concurrency: calls in flight at once, across threads.
        retries: further attempts after a transient failure, with exponential backoff; a
            ``Retry-After`` the provider sends is honoured (up to 5 minutes).
        backoff_s: the first wait; doubled each attempt (with jitter), capped at 60 s.
        cache_dir: where answers are cached, keyed by model, prompt, sampling, sample id and
            run id (None: no cache). Offline providers are never cached.
        record: a JSONL file receiving every exchange (``replay:FILE`` plays it back).
        price_override: dollars per million (input, output) tokens, instead of the table.
        max_consecutive_refusals: this many permanently refused requests in a row (with no
            answer between them) stop the run: the refusal concerns every request.
    """

    def __init__(self, provider: Provider, spec: str, *, sampling: Sampling | None = None,
                 max_concurrency: int = 8, retries: int = 5, backoff_s: float = 2.0,
                 cache_dir: str | Path | None = None, record: str | Path | None = None,
                 price_override: tuple[float, float] | None = None,
                 max_consecutive_refusals: int = 8) -> None:
        self.provider = provider
        self.spec = spec
        self.sampling = sampling or Sampling()
        self.retries = retries
        self.backoff_s = backoff_s
        self.cache_dir = Path(cache_dir) if cache_dir and not provider.offline else None
        self.record_path = Path(record) if record else None
        self.price_override = price_override
        self.max_consecutive_refusals = max_consecutive_refusals
        self.max_concurrency = max_concurrency
        self._slots = threading.Semaphore(max_concurrency)
        self._record_lock = threading.Lock()
        self._refusals_lock = threading.Lock()
        self._refusals_in_a_row = 0
        self._said_retrying = False  # the first failed call's line (_say_retrying) went out
        self._cancelled = threading.Event()
        #: sample ids whose request has gone out and not come back (after a stop: abandoned)
        self.in_flight: set[str] = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Stops the client for good (Ctrl-C): no request starts after this returns (a call
        waiting for a slot, or between retries, raises :class:`LLMCancelled`), and the
        provider ends what it can of the calls in flight."""
        self._cancelled.set()
        self.provider.cancel()

    def _check_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise LLMCancelled(f"{self.spec}: the run was stopped; no request was sent")

    def complete(self, prompt: str, *, sample: str, sampling: Sampling | None = None,
                 run: str = "") -> Completion:
        """One answer for ``prompt``; ``sample`` tells apart repeated draws of one prompt and
        ``run`` tells apart runs (a new run never gets another run's cached answers).

        Raises :class:`LLMRequestError` when the provider refuses this request for good, and
        :class:`LLMError` when the run cannot go on (retries exhausted, bad key, no model).
        """
        sampling = sampling or self.sampling
        key = self._cache_key(prompt, sampling, sample, run)
        completion = self._cached(key)
        if completion is None:
            self._check_cancelled()
            with self._slots:
                completion = self._call_with_retries(prompt, sampling, sample)
            if completion.cost is None and not self.provider.offline:
                completion.cost = price(completion.model, completion.input_tokens,
                                        completion.output_tokens, self.price_override)
            self._store(key, completion)
        self._record(prompt, sampling, sample, run, completion)
        return completion

    def _call_with_retries(self, prompt: str, sampling: Sampling, sample: str) -> Completion:
        for attempt in range(self.retries + 1):
            self._check_cancelled()  # also for a call that waited for its slot: none starts now
            self.in_flight.add(sample)
            try:
                completion = self.provider.complete(prompt, sampling, sample=sample)
            except Exception as exc:
                if isinstance(exc, LLMCancelled) or self._cancelled.is_set():
                    # abandoned by the stop: it stays among the calls in flight (it was sent)
                    raise LLMCancelled(f"{self.spec}: the run was stopped during the call",
                                       sent=True) from exc
                self.in_flight.discard(sample)
                if isinstance(exc, LLMError):
                    raise
                retryable = self.provider.is_retryable(exc)
                if attempt < self.retries and retryable:
                    self._say_retrying(exc)
                    delay = min(60.0, self.backoff_s * 2**attempt) * random.uniform(0.5, 1.0)
                    asked = retry_after(exc)
                    if self._cancelled.wait(min(MAX_WAIT_S, max(delay, asked or 0.0))):
                        raise LLMCancelled(f"{self.spec}: the run was stopped between retries",
                                           sent=True) from exc
                    continue
                raise self._failure(exc, retryable) from exc
            self.in_flight.discard(sample)
            with self._refusals_lock:
                self._refusals_in_a_row = 0
            return completion
        raise AssertionError("unreachable")

    def endpoint(self) -> str:
        """Where the provider sends requests: its base URL where it has one, else its spec."""
        for owner in (self.provider, getattr(self.provider, "client", None)):
            url = getattr(owner, "base_url", None)
            if url:
                return str(url)
        return self.spec

    def _say_retrying(self, exc: BaseException) -> None:
        """One line on stderr at this client's first failed call (an unreachable endpoint is
        otherwise a silent minute of backoff): which endpoint, why, and that it retries."""
        with self._refusals_lock:
            if self._said_retrying:
                return
            self._said_retrying = True
        wait = sum(min(60.0, self.backoff_s * 2**i) for i in range(self.retries))
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:200] if str(exc) else \
            type(exc).__name__
        print(f"jaxbench: model {self.spec} at {self.endpoint()} failed ({reason}); retrying, "
              f"up to {self.retries} more time{'s' if self.retries != 1 else ''} over "
              f"{wait:.0f} s at most, before the run "
              "stops (Ctrl-C stops now)", file=sys.stderr, flush=True)

    def _failure(self, exc: BaseException, retryable: bool) -> LLMError:
        text = f"{self.spec}: {type(exc).__name__}: {exc}"[:500]
        status = status_code(exc)
        if retryable or isinstance(exc, LLMConfigError) or status is None or status in FATAL_STATUSES:
            return LLMError(text)
        with self._refusals_lock:
            self._refusals_in_a_row += 1
            if self._refusals_in_a_row >= self.max_consecutive_refusals:
                return LLMError(f"{self._refusals_in_a_row} requests in a row were refused; "
                                f"the last: {text}")
        return LLMRequestError(text, status)

    def _cache_key(self, prompt: str, sampling: Sampling, sample: str, run: str) -> str:
        blob = json.dumps([self.spec, prompt, sampling.as_dict(), sample, run], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, key: str) -> Completion | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            data = json.loads(path.read_text())
            return Completion(**{**data, "cached": True})
        except (OSError, json.JSONDecodeError, TypeError):
            return None

    def _store(self, key: str, completion: Completion) -> None:
        if self.cache_dir is None:
            return
        path = self.cache_dir / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(completion.as_dict()))
        tmp.replace(path)  # atomic: a reader never sees half an answer

    def _record(self, prompt: str, sampling: Sampling, sample: str, run: str,
                completion: Completion) -> None:
        if self.record_path is None:
            return
        exchange: Exchange = {
            "spec": self.spec, "sample": sample, "run": run, "prompt_sha256": prompt_sha256(prompt),
            "sampling": sampling.as_dict(), "prompt": prompt, "response": completion.text,
            "model": completion.model, "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
            "cached_input_tokens": completion.cached_input_tokens, "cost": completion.cost,
            "finish_reason": completion.finish_reason,
        }
        with self._record_lock, open(self.record_path, "a") as f:
            f.write(json.dumps(exchange) + "\n")
            f.flush()
