"""Anthropic's Messages API: ``anthropic:claude-sonnet-4-5`` (``ANTHROPIC_API_KEY``)."""

from __future__ import annotations

import inspect
import time

from jaxbench.llm.base import Completion, Provider, Sampling, api_key, import_sdk, register_provider


@register_provider("anthropic")
class Anthropic(Provider):
    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        sdk = import_sdk("anthropic", "anthropic")
        self.client = sdk.Anthropic(api_key=api_key("ANTHROPIC_API_KEY"), timeout=timeout_s,
                                    max_retries=0)

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        started = time.monotonic()
        # Anthropic SDK 2.x dropped sampling parameters from messages.create(); send the
        # temperature only to an SDK that still takes it.
        takes_temperature = "temperature" in inspect.signature(self.client.messages.create).parameters
        extra = {"temperature": sampling.temperature} if takes_temperature else {}
        response = self.client.messages.create(
            model=self.model,
            max_tokens=sampling.max_tokens,
            messages=[{"role": "user", "content": prompt}],
            **extra,
        )
        text = "".join(block.text for block in response.content if block.type == "text")
        return Completion(
            text=text,
            model=self.model,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            latency_s=time.monotonic() - started,
        )
