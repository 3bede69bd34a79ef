"""The real OpenAI, Anthropic and Google GenAI SDKs, driven end to end against a local HTTP server that speaks
their APIs (127.0.0.1 only): `jaxbench optimize` with a provider spec as a user would run it."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SEED = (Path(__file__).parents[1] / "src/jaxbench/tasks/jaxbench/8p_gemm/seed_gpu.py").read_text()
ANSWER = f"Here is the kernel.\n```python\n{SEED}```\n"


class _Handler(BaseHTTPRequestHandler):
    requests: list = []
    truncated = False  # answer as if cut off at the token limit
    cached = False  # report 8 prompt tokens read from the provider's cache (2 written, Anthropic)

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append((self.path, body))
        if self.path.endswith("/chat/completions"):
            reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "length" if self.truncated else "stop",
                                  "message": {"role": "assistant", "content": ANSWER}}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33,
                               **({"prompt_tokens_details": {"cached_tokens": 8}} if self.cached else {})}}
        elif self.path.endswith("/messages"):
            reply = {"id": "m1", "type": "message", "role": "assistant", "model": body["model"],
                     "content": [{"type": "text", "text": ANSWER}],
                     "stop_reason": "max_tokens" if self.truncated else "end_turn",
                     "stop_sequence": None,
                     # Anthropic's input_tokens counts only what follows the cache breakpoint
                     "usage": {"input_tokens": 1, "output_tokens": 22,
                               "cache_read_input_tokens": 8, "cache_creation_input_tokens": 2}
                     if self.cached else {"input_tokens": 11, "output_tokens": 22}}
        elif self.path.endswith(":generateContent"):
            reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER}]},
                                     "finishReason": "MAX_TOKENS" if self.truncated else "STOP",
                                     "index": 0}],
                     "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 22,
                                       "totalTokenCount": 33,
                                       **({"cachedContentTokenCount": 8} if self.cached else {})}}
        else:
            self.send_error(404)
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.requests = []
    _Handler.truncated = False
    _Handler.cached = False
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _optimize(model, out, env_extra):
    import os

    env = {**os.environ, "JAX_PLATFORMS": "cpu", **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "jaxbench.cli", "optimize", "--method", "best_of_n", "--model", model,
         "--tasks", "8p_gemm", "--budget", "1", "--target", "gpu", "--trials", "1", "--no-cache",
         "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)


def _local_spec(provider: str, server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The model spec of ``provider`` pointed at the local test server (keys and base URLs)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server)
    return {"openai": f"openai:local-model@{server}/v1", "anthropic": "anthropic:claude-test",
            "gemini": "gemini:gemini-test"}[provider]


@pytest.mark.parametrize("provider,sdk", [("openai", "openai"), ("anthropic", "anthropic"),
                                          ("gemini", "google.genai")])
def test_sdk_round_trip_through_optimize(server, tmp_path, provider, sdk):
    pytest.importorskip(sdk)
    model, env = {
        "openai": (f"openai:local-model@{server}/v1", {}),
        "anthropic": ("anthropic:claude-test", {"ANTHROPIC_API_KEY": "test-key",
                                                 "ANTHROPIC_BASE_URL": server}),
        "gemini": ("gemini:gemini-test", {"GEMINI_API_KEY": "test-key",
                                          "GOOGLE_GEMINI_BASE_URL": server}),
    }[provider]
    out = _optimize(model, tmp_path / "run", env)
    assert out.returncode == 0, out.stdout + out.stderr
    path, body = _Handler.requests[0]
    assert "8p_gemm" in json.dumps(body)  # the task statement reached the server
    events = [json.loads(line) for line in (tmp_path / "run/events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "llm_call"]
    evals = [e for e in events if e["type"] == "evaluation"]
    assert len(calls) == 1 and calls[0]["input_tokens"] == 11 and calls[0]["output_tokens"] == 22
    # the provider reported no cache reads: OpenAI-compatible servers without prompt_tokens_details
    # and Anthropic without cache fields say nothing (None); Gemini leaves a zero count out (0)
    assert calls[0]["cached_input_tokens"] == {"openai": None, "anthropic": None, "gemini": 0}[provider]
    if provider == "anthropic":  # the prompt's fixed prefix went as a cacheable block
        blocks = body["messages"][0]["content"]
        assert blocks[0]["cache_control"] == {"type": "ephemeral"} and "## Task 8p_gemm" in blocks[0]["text"]
        assert "".join(b["text"] for b in blocks) == calls[0]["prompt"]
    assert [e["status"] for e in evals] == ["correct"]


@pytest.mark.parametrize("provider,sdk", [("openai", "openai"), ("anthropic", "anthropic"),
                                          ("gemini", "google.genai")])
def test_reasoning_controls_temperature_and_finish_reason_reach_each_sdk(server, monkeypatch,
                                                                         provider, sdk):
    pytest.importorskip(sdk)
    from jaxbench.llm import Sampling, get_model

    spec = _local_spec(provider, server, monkeypatch)
    sampling = Sampling(temperature=0.3, max_tokens=4096, reasoning_effort="high",
                        thinking_budget=None if provider == "openai" else 2048)
    model = get_model(spec, sampling=sampling)
    _Handler.truncated = True
    completion = model.complete("write a kernel", sample="t/m/s0")
    assert completion.finish_reason == "length" and completion.truncated
    _, body = _Handler.requests[-1]
    if provider == "openai":
        assert body["reasoning_effort"] == "high" and body["temperature"] == 0.3
    elif provider == "anthropic":
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assert body["output_config"] == {"effort": "high"} and body["temperature"] == 0.3
    else:
        config = body["generationConfig"]
        assert config["temperature"] == 0.3
        thinking = config.get("thinkingConfig") or config.get("thinking_config")
        normal = {k.replace("_", "").lower(): v for k, v in thinking.items()}
        assert normal == {"thinkingbudget": 2048, "thinkinglevel": "HIGH"}


@pytest.mark.parametrize("provider,sdk", [("openai", "openai"), ("anthropic", "anthropic"),
                                          ("gemini", "google.genai")])
def test_each_sdk_reports_the_cached_input_tokens(server, monkeypatch, provider, sdk):
    """The cached share of the input, from each API's own usage fields: OpenAI
    prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens (its input_tokens
    counts only the uncached tail, so the recorded input adds reads and writes back), Gemini
    cachedContentTokenCount."""
    pytest.importorskip(sdk)
    from jaxbench.agents.base import Prompt
    from jaxbench.llm import get_model

    spec = _local_spec(provider, server, monkeypatch)
    model = get_model(spec)
    _Handler.cached = True
    prompt = Prompt("the fixed task statement\n\nthe kernel of this step")
    prompt.fixed = len("the fixed task statement")
    completion = model.complete(prompt, sample="t/m/s0")
    assert completion.cached_input_tokens == 8 and completion.input_tokens == 11
    assert completion.output_tokens == 22
    _, body = _Handler.requests[-1]
    if provider == "anthropic":
        assert completion.extra == {"cache_creation_input_tokens": 2}
        assert body["messages"][0]["content"] == [
            {"type": "text", "text": "the fixed task statement", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "\n\nthe kernel of this step"}]
    elif provider == "openai":  # the others get the prompt as plain text
        assert body["messages"][0]["content"] == str(prompt)
    plain = model.complete("a prompt without a fixed part", sample="t/m/s1")
    assert plain.cached_input_tokens == 8
    if provider == "anthropic":  # nothing to mark: plain text, no breakpoint
        assert _Handler.requests[-1][1]["messages"][0]["content"] == "a prompt without a fixed part"
