"""Anthropic's Messages API: ``anthropic:claude-sonnet-4-5`` (``ANTHROPIC_API_KEY``)."""

from __future__ import annotations

import inspect
import time

from jaxbench.llm.base import Completion, Provider, Sampling, api_key, import_sdk, register_provider

# Anthropic's stop reasons, in the words every provider's finish reason is recorded with.
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
          "refusal": "content_filter", "model_context_window_exceeded": "length"}


@register_provider("anthropic")
class Anthropic(Provider):
    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        sdk = import_sdk("anthropic", "anthropic")
        self.client = sdk.Anthropic(api_key=api_key("ANTHROPIC_API_KEY"), timeout=timeout_s,
                                    max_retries=0)

    def request(self, prompt: str, sampling: Sampling) -> dict:
        """The keyword arguments of ``messages.create`` for one call. Every setting asked for
        is sent: SDKs that no longer name ``temperature`` get it in the request body."""
        args: dict = {"model": self.model, "max_tokens": sampling.max_tokens,
                      "messages": [{"role": "user", "content": prompt}]}
        extra: dict = {}
        parameters = inspect.signature(self.client.messages.create).parameters
        if sampling.temperature is not None:
            if "temperature" in parameters:
                args["temperature"] = sampling.temperature
            else:
                extra["temperature"] = sampling.temperature
        if sampling.thinking_budget is not None:
            args["thinking"] = {"type": "enabled", "budget_tokens": sampling.thinking_budget}
        if sampling.reasoning_effort is not None:
            effort = {"effort": sampling.reasoning_effort}
            if "output_config" in parameters:
                args["output_config"] = effort
            else:
                extra["output_config"] = effort
        if extra:
            args["extra_body"] = extra
        return args

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        started = time.monotonic()
        response = self.client.messages.create(**self.request(prompt, sampling))
        text = "".join(block.text for block in response.content if block.type == "text")
        stop = getattr(response, "stop_reason", None)
        return Completion(
            text=text,
            model=self.model,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            latency_s=time.monotonic() - started,
            finish_reason=FINISH.get(stop, stop),
        )
