"""Model clients: spec parsing, one-line configuration errors, retries, cache, cost,
concurrency, the scripted test double, and record/replay."""

from __future__ import annotations

import sys
import threading
import time
import types

import pytest
from click.testing import CliRunner

from jaxbench.llm import (
    Completion,
    LLMConfigError,
    LLMError,
    LLMRequestError,
    ModelClient,
    Provider,
    Sampling,
    get_model,
    price,
)


class FakeProvider(Provider):
    """Answers "answer N" for the N-th call; fails the first ``failures`` calls."""

    def __init__(self, failures: int = 0, status_code: int = 429, delay_s: float = 0.0) -> None:
        super().__init__("fake-model")
        self.calls = 0
        self.failures = failures
        self.status_code = status_code
        self.delay_s = delay_s
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        with self._lock:
            self.calls += 1
            call = self.calls
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay_s)
            if call <= self.failures:
                error = RuntimeError("rate limited")
                error.status_code = self.status_code  # type: ignore[attr-defined]
                raise error
            return Completion(text=f"answer {call}", model="gpt-5", input_tokens=1000,
                              output_tokens=100)
        finally:
            with self._lock:
                self.in_flight -= 1


def test_bad_specs_are_one_line_errors():
    for spec, expected in [("gpt-5", "PROVIDER:MODEL"), ("nope:model", "unknown model provider"),
                           ("openai:", "PROVIDER:MODEL")]:
        with pytest.raises(LLMConfigError, match=expected) as info:
            get_model(spec)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("spec, module, extra", [
    ("openai:gpt-5", "openai", "openai"),
    ("gemini:gemini-2.5-pro", "google.genai", "gemini"),
    ("anthropic:claude-sonnet-4-5", "anthropic", "anthropic"),
])
def test_missing_sdk_names_the_extra(monkeypatch, spec, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # makes the import fail
    with pytest.raises(LLMConfigError) as info:
        get_model(spec)
    assert f"pip install 'jaxbench[{extra}]'" in str(info.value)
    assert "\n" not in str(info.value)


def _fake_sdk(monkeypatch, name: str, **attrs) -> None:
    monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**attrs))


@pytest.mark.parametrize("spec, variables", [
    ("openai:gpt-5", ["OPENAI_API_KEY"]),
    ("anthropic:claude-sonnet-4-5", ["ANTHROPIC_API_KEY"]),
    ("gemini:gemini-2.5-pro", ["GEMINI_API_KEY", "GOOGLE_API_KEY"]),
])
def test_missing_key_names_the_variable(monkeypatch, spec, variables):
    _fake_sdk(monkeypatch, "openai", OpenAI=lambda **kw: None)
    _fake_sdk(monkeypatch, "anthropic", Anthropic=lambda **kw: None)
    _fake_sdk(monkeypatch, "google.genai", Client=lambda **kw: None)
    _fake_sdk(monkeypatch, "google.genai.types", HttpOptions=lambda **kw: None)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(LLMConfigError) as info:
        get_model(spec)
    assert all(v in str(info.value) for v in variables)
    monkeypatch.setenv(variables[0], "k")
    assert get_model(spec).spec == spec


def test_openai_compatible_server_needs_no_key(monkeypatch):
    seen = {}
    _fake_sdk(monkeypatch, "openai", OpenAI=lambda **kw: seen.update(kw))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = get_model("openai:my-model@http://localhost:8000/v1")
    assert model.provider.model == "my-model"
    assert seen["base_url"] == "http://localhost:8000/v1"


def test_cli_missing_key_is_one_line_exit_2(monkeypatch, tmp_path):
    from jaxbench.cli import main

    _fake_sdk(monkeypatch, "anthropic", Anthropic=lambda **kw: None)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["optimize", "--method", "best_of_n", "--model",
                                       "anthropic:claude-sonnet-4-5", "--tasks", "8p_gemm",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0]
    assert not (tmp_path / "run").exists()


def test_transient_errors_are_retried_with_backoff():
    provider = FakeProvider(failures=2, status_code=429)
    client = ModelClient(provider, "fake:x", retries=3, backoff_s=0.001)
    assert client.complete("p", sample="0").text == "answer 3"
    assert provider.calls == 3


def test_permanent_errors_are_not_retried():
    provider = FakeProvider(failures=5, status_code=400)
    client = ModelClient(provider, "fake:x", retries=3, backoff_s=0.001)
    with pytest.raises(LLMRequestError, match="rate limited") as info:
        client.complete("p", sample="0")
    assert provider.calls == 1 and info.value.status_code == 400


@pytest.mark.parametrize("status", [401, 403, 404])
def test_refusals_that_concern_every_request_stop_the_run(status):
    client = ModelClient(FakeProvider(failures=5, status_code=status), "fake:x", retries=3)
    with pytest.raises(LLMError) as info:
        client.complete("p", sample="0")
    assert not isinstance(info.value, LLMRequestError)


def test_many_refusals_in_a_row_stop_the_run():
    client = ModelClient(FakeProvider(failures=10, status_code=400), "fake:x",
                         max_consecutive_refusals=3)
    for _ in range(2):
        with pytest.raises(LLMRequestError):
            client.complete("p", sample="0")
    with pytest.raises(LLMError, match="3 requests in a row were refused") as info:
        client.complete("p", sample="0")
    assert not isinstance(info.value, LLMRequestError)


def test_retry_after_is_honoured():
    class Limited(FakeProvider):
        def complete(self, prompt, sampling, *, sample):  # noqa: ANN001, ANN201
            self.calls += 1
            if self.calls == 1:
                error = RuntimeError("slow down")
                error.status_code = 429  # type: ignore[attr-defined]
                error.response = types.SimpleNamespace(headers={"retry-after": "0.3"})  # type: ignore[attr-defined]
                raise error
            return Completion(text="ok", model="gpt-5")

    client = ModelClient(Limited(), "fake:x", retries=2, backoff_s=0.001)
    started = time.monotonic()
    assert client.complete("p", sample="0").text == "ok"
    assert time.monotonic() - started >= 0.3
    from jaxbench.llm.base import retry_after

    ms = types.SimpleNamespace(response=types.SimpleNamespace(headers={"retry-after-ms": "1500"}))
    assert retry_after(ms) == 1.5
    assert retry_after(RuntimeError("no response")) is None


def test_retries_give_up_after_the_limit():
    provider = FakeProvider(failures=10, status_code=503)
    client = ModelClient(provider, "fake:x", retries=2, backoff_s=0.001)
    with pytest.raises(LLMError):
        client.complete("p", sample="0")
    assert provider.calls == 3


def test_cost_from_the_price_table():
    assert price("gpt-5", 1_000_000, 1_000_000) == pytest.approx(11.25)
    assert price("gpt-5-mini-2025-08-07", 1_000_000, 0) == pytest.approx(0.25)  # dated release
    assert price("claude-sonnet-4-5-20250929", 0, 1_000_000) == pytest.approx(15.0)
    assert price("models/gemini-2.5-pro", 1_000_000, 0) == pytest.approx(1.25)
    assert price("claude-3-5-haiku-latest", 1_000_000, 0) == pytest.approx(0.80)
    # variants are never priced as their family
    assert price("gpt-5-pro", 10, 10) is None
    assert price("o3-pro", 10, 10) is None
    assert price("claude-opus-4-5", 1_000_000, 0) == pytest.approx(5.0)  # not opus-4's 15
    assert price("gpt-4.1-nano", 1_000_000, 0) == pytest.approx(0.10)   # not gpt-4.1's 2
    assert price("some-unknown-model", 10, 10) is None
    assert price("gpt-5", None, 10) is None
    assert price("my-local-model", 1_000_000, 1_000_000, override=(0.5, 1.0)) == pytest.approx(1.5)
    completion = ModelClient(FakeProvider(), "fake:x").complete("p", sample="0")
    assert completion.cost == pytest.approx((1000 * 1.25 + 100 * 10.0) / 1e6)
    overridden = ModelClient(FakeProvider(), "fake:x", price_override=(2.0, 0.0)).complete("p", sample="0")
    assert overridden.cost == pytest.approx(1000 * 2.0 / 1e6)


def test_cache_is_keyed_by_prompt_sampling_and_sample(tmp_path):
    provider = FakeProvider()
    client = ModelClient(provider, "fake:x", cache_dir=tmp_path)
    first = client.complete("p", sample="0")
    again = ModelClient(provider, "fake:x", cache_dir=tmp_path).complete("p", sample="0")
    assert (again.text, again.cached, provider.calls) == (first.text, True, 1)
    client.complete("p", sample="1")
    client.complete("q", sample="0")
    client.complete("p", sample="0", sampling=Sampling(temperature=0.0))
    assert provider.calls == 4
    # another run never replays this run's answers (nor charges their cost again)
    other = client.complete("p", sample="0", run="another-run")
    assert provider.calls == 5 and not other.cached
    again = client.complete("p", sample="0", run="another-run")
    assert again.cached and again.cost == other.cost  # a resumed run: the same call, paid once


def test_concurrency_limit():
    provider = FakeProvider(delay_s=0.05)
    client = ModelClient(provider, "fake:x", max_concurrency=2)
    threads = [threading.Thread(target=client.complete, args=("p",), kwargs={"sample": str(i)})
               for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert provider.calls == 6 and provider.max_in_flight == 2


def test_scripted_plays_files_in_name_order_and_wraps(tmp_path):
    for name, text in [("b.txt", "second"), ("a.txt", "first"), (".hidden", "never")]:
        (tmp_path / name).write_text(text)
    model = get_model(f"scripted:{tmp_path}")
    completions = [model.complete("p", sample=str(i)) for i in range(3)]
    assert [c.text for c in completions] == ["first", "second", "first"]
    assert all(c.cost is None for c in completions)  # unpriced: the report says so, not $0
    slow = get_model(f"scripted:{tmp_path}?latency=0.2")
    started = time.monotonic()
    slow.complete("p", sample="0")
    assert time.monotonic() - started >= 0.2
    with pytest.raises(LLMConfigError, match="latency=SECONDS"):
        get_model(f"scripted:{tmp_path}?speed=2")
    with pytest.raises(LLMConfigError, match="no such directory"):
        get_model(f"scripted:{tmp_path / 'missing'}")


def test_scripted_answers_each_task_from_its_own_folder(tmp_path):
    """A folder named after a task answers that task's calls (the sample id starts with the
    task); other tasks get the top-level files, and a task with neither is a config error."""
    (tmp_path / "8p_gemm").mkdir()
    (tmp_path / "8p_gemm" / "1.md").write_text("gemm kernel")
    (tmp_path / "top.md").write_text("any kernel")
    model = get_model(f"scripted:{tmp_path}")
    assert model.complete("p", sample="8p_gemm/best_of_n/0").text == "gemm kernel"
    assert model.complete("p", sample="12p_rmsnorm/best_of_n/0").text == "any kernel"
    (tmp_path / "top.md").unlink()
    only_tasks = get_model(f"scripted:{tmp_path}")
    assert only_tasks.complete("p", sample="8p_gemm/iterative/3").text == "gemm kernel"
    with pytest.raises(LLMError, match="no answers for 12p_rmsnorm"):
        only_tasks.complete("p", sample="12p_rmsnorm/best_of_n/0")


def test_record_then_replay_offline(tmp_path):
    record = tmp_path / "exchanges.jsonl"
    client = ModelClient(FakeProvider(), "fake:x", record=record)
    originals = {s: client.complete(f"prompt {s}", sample=s).text for s in ("a", "b")}
    replay = get_model(f"replay:{record}")
    assert replay.complete("prompt b", sample="b").text == originals["b"]
    # A changed prompt (e.g. feedback quoting a timing) still finds its sample.
    assert replay.complete("prompt a, edited", sample="a").text == originals["a"]
    with pytest.raises(LLMError, match="no recorded answer"):
        replay.complete("prompt c", sample="c")
    played = replay.complete("prompt a", sample="a")
    assert played.cost is None and played.extra["recorded_cost"] == pytest.approx(0.00225)


def test_sampling_rejects_unknown_reasoning_efforts():
    with pytest.raises(ValueError, match="reasoning effort 'huge'"):
        Sampling(reasoning_effort="huge")
    assert Sampling().temperature is None  # the provider's default unless asked


class CachingProvider(Provider):
    """Reports 600 of its 1000 input tokens as read from the provider's prompt cache."""

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        return Completion(text=f"answer to {prompt}", model="gpt-5", input_tokens=1000,
                          output_tokens=100, cached_input_tokens=600)


def test_cached_input_tokens_survive_the_cache_the_record_and_replay(tmp_path):
    import json

    record = tmp_path / "exchanges.jsonl"
    client = ModelClient(CachingProvider("caching"), "fake:x", cache_dir=tmp_path / "cache", record=record)
    assert client.complete("p", sample="0").cached_input_tokens == 600
    again = ModelClient(CachingProvider("caching"), "fake:x", cache_dir=tmp_path / "cache").complete(
        "p", sample="0")
    assert again.cached and again.cached_input_tokens == 600
    assert json.loads(record.read_text().splitlines()[0])["cached_input_tokens"] == 600
    assert get_model(f"replay:{record}").complete("p", sample="0").cached_input_tokens == 600
    # a cache entry written before the field existed still loads (the provider did not say)
    entry = next((tmp_path / "cache").rglob("*.json"))
    data = json.loads(entry.read_text())
    del data["cached_input_tokens"]
    entry.write_text(json.dumps(data))
    old = ModelClient(CachingProvider("caching"), "fake:x", cache_dir=tmp_path / "cache").complete(
        "p", sample="0")
    assert old.cached and old.cached_input_tokens is None
    # the test doubles report nothing
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "a.txt").write_text("an answer")
    assert get_model(f"scripted:{tmp_path / 'answers'}").complete("p", sample="0").cached_input_tokens is None
