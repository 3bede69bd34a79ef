"""``replay:FILE``: answers from a ``--record`` file, offline.

An exchange is found by its prompt and sample id; when the prompt changed (feedback
that quotes a timing, say) the sample id alone is used. No match is an error, never
a made-up answer. Played-back answers cost nothing: their cost is None ("unpriced"),
and the recorded cost is kept as ``recorded_cost``.
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxbench.llm.base import Completion, LLMConfigError, LLMError, Provider, Sampling, register_provider
from jaxbench.llm.client import prompt_sha256


@register_provider("replay")
class Replay(Provider):
    offline = True

    def __init__(self, spec: str, *, timeout_s: float = 600.0) -> None:
        super().__init__(spec, timeout_s=timeout_s)
        path = Path(spec)
        if not path.is_file():
            raise LLMConfigError(f"replay:{spec}: no such file (write one with --record)")
        self.by_prompt: dict[tuple[str, str], dict] = {}
        self.by_sample: dict[str, dict] = {}
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            try:
                exchange = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a killed recording
            self.by_prompt[(exchange["prompt_sha256"], exchange["sample"])] = exchange
            self.by_sample[exchange["sample"]] = exchange

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        exchange = self.by_prompt.get((prompt_sha256(prompt), sample)) or self.by_sample.get(sample)
        if exchange is None:
            raise LLMError(f"replay:{self.spec} has no recorded answer for sample {sample!r}")
        return Completion(text=exchange["response"], model=exchange.get("model", "replay"),
                          input_tokens=exchange.get("input_tokens"),
                          output_tokens=exchange.get("output_tokens"),
                          cached_input_tokens=exchange.get("cached_input_tokens"), cost=None,
                          finish_reason=exchange.get("finish_reason"),
                          extra={"recorded_cost": exchange.get("cost")})
