"""OpenAI-compatible chat completions: OpenAI itself, or any server speaking the API.

Prompt caching is automatic on OpenAI (and on servers with prefix caching); the cached share
of a call's input comes back as ``usage.prompt_tokens_details.cached_tokens``, recorded as
``cached_input_tokens`` (None when the server does not report it).

``openai:gpt-5`` calls OpenAI with ``OPENAI_API_KEY``; ``openai:MODEL@URL`` calls
a vLLM / SGLang / hosted endpoint at ``URL`` (``OPENAI_API_KEY`` optional there).
"""

from __future__ import annotations

import os
import time

from jaxbench.llm.base import (
    Completion,
    LLMConfigError,
    Provider,
    Sampling,
    api_key,
    import_sdk,
    register_provider,
)

# OpenAI's finish reasons are already the normalised words ("stop", "length", ...).


@register_provider("openai")
class OpenAICompatible(Provider):
    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        self.model, _, self.base_url = spec.partition("@")
        sdk = import_sdk("openai", "openai")
        if self.base_url:
            key = os.environ.get("OPENAI_API_KEY") or "EMPTY"  # local servers ignore it
        else:
            key = api_key("OPENAI_API_KEY")
        # Retries are ours (one policy for every provider), so the SDK's are off.
        self.client = sdk.OpenAI(api_key=key, base_url=self.base_url or None, timeout=timeout_s,
                                 max_retries=0)

    def check_sampling(self, sampling: Sampling) -> None:
        if sampling.thinking_budget is not None:
            raise LLMConfigError("the openai provider takes --reasoning-effort, not --thinking-budget")

    def request(self, prompt: str, sampling: Sampling, sample: str = "") -> dict:
        """The keyword arguments of ``chat.completions.create`` for one call."""
        self.check_sampling(sampling)
        # Hosted reasoning models take max_completion_tokens; older servers only max_tokens.
        args: dict = {"model": self.model, "messages": [{"role": "user", "content": str(prompt)}],
                      "max_tokens" if self.base_url else "max_completion_tokens": sampling.max_tokens}
        if sampling.temperature is not None:
            args["temperature"] = sampling.temperature
        if sampling.reasoning_effort is not None:
            args["reasoning_effort"] = sampling.reasoning_effort
        if sampling.seed is not None:
            args["seed"] = sampling.call_seed(sample)
        return args

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        started = time.monotonic()
        response = self.client.chat.completions.create(**self.request(prompt, sampling, sample))
        usage = response.usage
        choice = response.choices[0]
        details = getattr(usage, "prompt_tokens_details", None)
        return Completion(
            text=choice.message.content or "",
            model=self.model,
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            # OpenAI caches prompts of 1024+ tokens by their longest common prefix, unasked
            cached_input_tokens=getattr(details, "cached_tokens", None),
            latency_s=time.monotonic() - started,
            finish_reason=getattr(choice, "finish_reason", None),
        )
