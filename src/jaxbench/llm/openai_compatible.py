"""OpenAI-compatible chat completions: OpenAI itself, or any server speaking the API.

``openai:gpt-5`` calls OpenAI with ``OPENAI_API_KEY``; ``openai:MODEL@URL`` calls
a vLLM / SGLang / hosted endpoint at ``URL`` (``OPENAI_API_KEY`` optional there).
"""

from __future__ import annotations

import os
import time

from jaxbench.llm.base import Completion, Provider, Sampling, api_key, import_sdk, register_provider


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

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        # Hosted reasoning models take max_completion_tokens; older servers only max_tokens.
        limit = {"max_tokens" if self.base_url else "max_completion_tokens": sampling.max_tokens}
        started = time.monotonic()
        response = self.client.chat.completions.create(
            model=self.model,
            messages=[{"role": "user", "content": prompt}],
            temperature=sampling.temperature,
            **limit,
        )
        usage = response.usage
        return Completion(
            text=response.choices[0].message.content or "",
            model=self.model,
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            latency_s=time.monotonic() - started,
        )
