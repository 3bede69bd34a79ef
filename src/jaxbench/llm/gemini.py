"""Google Gemini through the ``google-genai`` SDK: ``gemini:gemini-2.5-pro`` (``GEMINI_API_KEY``).

Gemini 2.5 models cache common prompt prefixes implicitly; the cached share of a call's input
is ``usage_metadata.cached_content_token_count`` (included in ``prompt_token_count``),
recorded as ``cached_input_tokens``."""

from __future__ import annotations

import time

from jaxbench.llm.base import Completion, Provider, Sampling, api_key, import_sdk, register_provider

FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter",
          "RECITATION": "content_filter", "PROHIBITED_CONTENT": "content_filter"}
# --reasoning-effort words -> Gemini's thinking levels
LEVELS = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH", "xhigh": "XHIGH",
          "max": "XHIGH"}


def _cached_tokens(usage: object) -> int | None:
    """The cached prompt tokens of a call: the API leaves the count out when it is zero, so
    a usage with a prompt count and no cached count had none cached."""
    cached = getattr(usage, "cached_content_token_count", None)
    if cached is None and getattr(usage, "prompt_token_count", None) is not None:
        return 0
    return cached


@register_provider("gemini")
class Gemini(Provider):
    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        genai = import_sdk("google.genai", "gemini", "google-genai")
        self.types = import_sdk("google.genai.types", "gemini", "google-genai")
        key = api_key("GEMINI_API_KEY", "GOOGLE_API_KEY")
        self.client = genai.Client(api_key=key,
                                   http_options=self.types.HttpOptions(timeout=int(timeout_s * 1000)))

    def config(self, sampling: Sampling, sample: str = "") -> object:
        """The ``GenerateContentConfig`` of one call."""
        args: dict = {"max_output_tokens": sampling.max_tokens}
        if sampling.seed is not None:
            args["seed"] = sampling.call_seed(sample)
        if sampling.temperature is not None:
            args["temperature"] = sampling.temperature
        thinking: dict = {}
        if sampling.thinking_budget is not None:
            thinking["thinking_budget"] = sampling.thinking_budget
        if sampling.reasoning_effort is not None:
            thinking["thinking_level"] = LEVELS[sampling.reasoning_effort]
        if thinking:
            args["thinking_config"] = self.types.ThinkingConfig(**thinking)
        return self.types.GenerateContentConfig(**args)

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        started = time.monotonic()
        response = self.client.models.generate_content(model=self.model, contents=str(prompt),
                                                       config=self.config(sampling, sample))
        usage = response.usage_metadata
        output = None
        if usage is not None and usage.candidates_token_count is not None:
            # Thinking tokens are billed as output tokens.
            output = usage.candidates_token_count + (usage.thoughts_token_count or 0)
        finish = None
        candidates = getattr(response, "candidates", None) or []
        if candidates and getattr(candidates[0], "finish_reason", None) is not None:
            raw = str(getattr(candidates[0].finish_reason, "value", candidates[0].finish_reason))
            finish = FINISH.get(raw, raw.lower())
        return Completion(
            text=response.text or "",
            model=self.model,
            input_tokens=getattr(usage, "prompt_token_count", None),
            output_tokens=output,
            cached_input_tokens=_cached_tokens(usage),
            latency_s=time.monotonic() - started,
            finish_reason=finish,
        )
