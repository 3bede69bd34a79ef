"""Anthropic's Messages API: ``anthropic:claude-sonnet-4-5`` (``ANTHROPIC_API_KEY``).

Anthropic caches a prompt prefix only up to an explicit breakpoint. A prompt that says where
its fixed part ends (``prompt.fixed``, set by the agents' prompts) is sent as two text
blocks, the fixed prefix marked ``cache_control: ephemeral``, so every later call of the
task and method reads it from the cache (a prefix under the model's minimum cacheable length
is simply not cached). Anthropic's ``input_tokens`` counts only the tokens after the
breakpoint; the recorded ``input_tokens`` adds the cache reads and writes back, so it means
every input token as for the other providers, and ``cached_input_tokens`` is
``cache_read_input_tokens`` (the writes are kept in ``extra``).
"""

from __future__ import annotations

import inspect
import time

from jaxbench.llm.base import Completion, Provider, Sampling, api_key, import_sdk, register_provider

# Anthropic's stop reasons, in the words every provider's finish reason is recorded with.
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
          "refusal": "content_filter", "model_context_window_exceeded": "length"}


def content(prompt: str) -> str | list[dict]:
    """The user message's content: the prompt as text, or, when it says where its fixed
    prefix ends, that prefix as a cacheable text block followed by the rest."""
    text = str(prompt)
    fixed = getattr(prompt, "fixed", 0)
    if not isinstance(fixed, int) or fixed <= 0 or fixed > len(text) or not text[:fixed].strip():
        return text
    head, rest = text[:fixed], text[fixed:]
    blocks: list[dict] = [{"type": "text", "text": head if rest.strip() else text,
                           "cache_control": {"type": "ephemeral"}}]
    if rest.strip():
        blocks.append({"type": "text", "text": rest})
    return blocks


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
                      "messages": [{"role": "user", "content": content(prompt)}]}
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
        usage = response.usage
        read = getattr(usage, "cache_read_input_tokens", None)
        written = getattr(usage, "cache_creation_input_tokens", None)
        total = None if usage.input_tokens is None else usage.input_tokens + (read or 0) + (written or 0)
        return Completion(
            text=text,
            model=self.model,
            input_tokens=total,
            output_tokens=usage.output_tokens,
            cached_input_tokens=read,
            latency_s=time.monotonic() - started,
            finish_reason=FINISH.get(stop, stop),
            extra={"cache_creation_input_tokens": written} if written else {},
        )
