"""Google Gemini through the ``google-genai`` SDK: ``gemini:gemini-2.5-pro`` (``GEMINI_API_KEY``)."""

from __future__ import annotations

import time

from jaxbench.llm.base import Completion, Provider, Sampling, api_key, import_sdk, register_provider


@register_provider("gemini")
class Gemini(Provider):
    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        genai = import_sdk("google.genai", "gemini", "google-genai")
        self.types = import_sdk("google.genai.types", "gemini", "google-genai")
        key = api_key("GEMINI_API_KEY", "GOOGLE_API_KEY")
        self.client = genai.Client(api_key=key,
                                   http_options=self.types.HttpOptions(timeout=int(timeout_s * 1000)))

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        config = self.types.GenerateContentConfig(temperature=sampling.temperature,
                                                  max_output_tokens=sampling.max_tokens)
        started = time.monotonic()
        response = self.client.models.generate_content(model=self.model, contents=prompt,
                                                       config=config)
        usage = response.usage_metadata
        output = None
        if usage is not None and usage.candidates_token_count is not None:
            # Thinking tokens are billed as output tokens.
            output = usage.candidates_token_count + (usage.thoughts_token_count or 0)
        return Completion(
            text=response.text or "",
            model=self.model,
            input_tokens=getattr(usage, "prompt_token_count", None),
            output_tokens=output,
            latency_s=time.monotonic() - started,
        )
