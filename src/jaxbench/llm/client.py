"""The model client every method talks to: one provider plus retries, a concurrency
limit, an on-disk response cache, cost accounting and an optional JSONL recording.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

from jaxbench.llm.base import Completion, LLMError, Provider, Sampling, price


def prompt_sha256(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()


class ModelClient:
    """Calls one model.

    Args:
        provider: the adapter that reaches the model.
        spec: the ``PROVIDER:MODEL`` string (recorded with every exchange).
        sampling: default sampling parameters.
        max_concurrency: calls in flight at once, across threads.
        retries: further attempts after a transient failure, with exponential backoff.
        backoff_s: the first wait; doubled each attempt (with jitter), capped at 60 s.
        cache_dir: where answers are cached, keyed by model, prompt, sampling and sample
            id (None: no cache). Offline providers are never cached.
        record: a JSONL file receiving every exchange (``replay:FILE`` plays it back).
    """

    def __init__(self, provider: Provider, spec: str, *, sampling: Sampling | None = None,
                 max_concurrency: int = 8, retries: int = 5, backoff_s: float = 2.0,
                 cache_dir: str | Path | None = None, record: str | Path | None = None) -> None:
        self.provider = provider
        self.spec = spec
        self.sampling = sampling or Sampling()
        self.retries = retries
        self.backoff_s = backoff_s
        self.cache_dir = Path(cache_dir) if cache_dir and not provider.offline else None
        self.record_path = Path(record) if record else None
        self._slots = threading.Semaphore(max_concurrency)
        self._record_lock = threading.Lock()

    def complete(self, prompt: str, *, sample: str, sampling: Sampling | None = None) -> Completion:
        """One answer for ``prompt``; ``sample`` tells apart repeated draws of one prompt."""
        sampling = sampling or self.sampling
        key = self._cache_key(prompt, sampling, sample)
        completion = self._cached(key)
        if completion is None:
            with self._slots:
                completion = self._call_with_retries(prompt, sampling, sample)
            if completion.cost is None and not self.provider.offline:
                completion.cost = price(completion.model, completion.input_tokens,
                                        completion.output_tokens)
            self._store(key, completion)
        self._record(prompt, sampling, sample, completion)
        return completion

    def _call_with_retries(self, prompt: str, sampling: Sampling, sample: str) -> Completion:
        for attempt in range(self.retries + 1):
            try:
                return self.provider.complete(prompt, sampling, sample=sample)
            except Exception as exc:
                if attempt == self.retries or not self.provider.is_retryable(exc):
                    raise LLMError(f"{self.spec}: {type(exc).__name__}: {exc}"[:500]) from exc
                delay = min(60.0, self.backoff_s * 2**attempt) * random.uniform(0.5, 1.0)
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _cache_key(self, prompt: str, sampling: Sampling, sample: str) -> str:
        blob = json.dumps([self.spec, prompt, sampling.as_dict(), sample], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, key: str) -> Completion | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return Completion(**{**data, "cached": True})

    def _store(self, key: str, completion: Completion) -> None:
        if self.cache_dir is None:
            return
        path = self.cache_dir / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(completion.as_dict()))
        tmp.replace(path)  # atomic: a reader never sees half an answer

    def _record(self, prompt: str, sampling: Sampling, sample: str, completion: Completion) -> None:
        if self.record_path is None:
            return
        exchange: dict[str, Any] = {
            "spec": self.spec, "sample": sample, "prompt_sha256": prompt_sha256(prompt),
            "sampling": sampling.as_dict(), "prompt": prompt, "response": completion.text,
            "model": completion.model, "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens, "cost": completion.cost,
        }
        with self._record_lock, open(self.record_path, "a") as f:
            f.write(json.dumps(exchange) + "\n")
            f.flush()
