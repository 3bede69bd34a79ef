"""Optimizing methods end to end with scripted models and the real evaluator: events,
budgets, feedback (profile, IR facts, error lines), resume, failed model calls, the CLI,
prompts and answer extraction. (Every task and suite: test_agents_suite.py; method
behaviours: test_agents_methods.py; the docs pack: test_agents_docs.py.)"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from agent_fakes import KilledAfter, Refusing, verdict
from click.testing import CliRunner

from jaxbench.agents import METHODS, get_method, optimize
from jaxbench.agents.base import CandidateError
from jaxbench.agents.evolve import apply_edits
from jaxbench.agents.prompts import describe_verdict, error_lines, extract_code, ir_facts, task_statement
from jaxbench.cli import main
from jaxbench.contract import Settings
from jaxbench.llm import ModelClient, get_model
from jaxbench.llm.scripted import Scripted
from jaxbench.runs import RunDir, read_events
from jaxbench.tasks import get_task

# Instant verdicts: both fail the static stage without a worker process.
BROKEN = "My kernel:\n```python\nimport jax\nTARGET = 'gpu'\n\ndef kernel(a, b)\n    return a\n```\n"
BROKEN_2 = "```python\nimport jax\nTARGET = 'gpu'\n\ndef kernel(a, b):\n    return (a\n```\n"

def broken(i: int) -> str:
    """A distinct kernel with a syntax error (no two are deduplicated as one kernel)."""
    return f"```python\nTARGET = 'gpu'\n\ndef kernel(a, b)\n    return a + {i}\n```\n"


SMALL_OPTIONS = {"best_of_n": {}, "iterative": {"chains": 2},
                 "autocomp": {"beam_width": 2, "plans": 1},
                 "evolve": {"islands": 2, "children": 2, "novelty_threshold": 1.0}}


def script(directory: Path, *answers: str) -> str:
    """A scripted model spec answering ``answers`` in turn."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, answer in enumerate(answers):
        (directory / f"{i:02d}.txt").write_text(answer)
    return f"scripted:{directory}"


def seed(task_id: str, target: str) -> str:
    return get_task(task_id).kernel_files()[("seed", target)].read_text()


def events_of(run: RunDir | Path, kind: str) -> list[dict]:
    path = run.path if isinstance(run, RunDir) else run
    return [e for e in read_events(path) if e.get("type") == kind]


def samples_by_task(run: RunDir) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in events_of(run, "evaluation"):
        if e["sample"] is not None:
            out.setdefault(e["task"], []).append(e)
    return out


class CountingEvaluator:
    """Delegates to the real evaluator and counts the evaluations it was asked for."""

    def __init__(self, inner) -> None:  # noqa: ANN001
        self.inner, self.calls, self._lock = inner, 0, threading.Lock()

    def evaluate(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        with self._lock:
            self.calls += 1
        return self.inner.evaluate(*args, **kwargs)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_method_end_to_end_on_two_tasks(method, tmp_path, evaluator):
    run = RunDir.open(tmp_path / "run", {"method": method})
    for task_id in ("8p_gemm", "12p_rmsnorm"):
        # the seed with a new line: evolve rejects exact copies of its seed before evaluating
        variant = seed(task_id, "gpu") + "\n_VARIANT = 1\n"
        model = get_model(script(tmp_path / task_id, BROKEN, variant))
        optimize([task_id], get_method(method, **SMALL_OPTIONS[method]), model, run, budget=2,
                 target="gpu", size="small", mode="interpret", trials=1, workers=2,
                 evaluator=evaluator)
    by_task = samples_by_task(run)
    assert sorted(by_task) == ["12p_rmsnorm", "8p_gemm"]
    for task_id, evals in by_task.items():
        assert sorted(e["sample"] for e in evals) == [0, 1]
        statuses = {e["status"] for e in evals}
        assert "correct" in statuses, (task_id, [e["message"] for e in evals])
        for e in evals:
            assert e["method"] == method and e["candidate_sha256"] and e["mode"] == "interpret"
    calls = events_of(run, "llm_call")
    assert all(c["prompt"] and c["response"] and c["task"] in by_task for c in calls)
    done = events_of(run, "task_done")
    assert [d["task"] for d in done] == ["8p_gemm", "12p_rmsnorm"]
    assert all(d["best_status"] == "correct" and d["samples"] == 2 for d in done)
    if method == "evolve":  # seeded with the shipped seed kernels, which are free
        seeds = [e for e in events_of(run, "evaluation") if e["origin"] == "seed"]
        assert len(seeds) == 2 and all(e["sample"] is None for e in seeds)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_budget_is_never_exceeded(method, tmp_path, evaluator):
    run = RunDir.open(tmp_path / "run", {})
    model = get_model(script(tmp_path / "script", BROKEN, BROKEN_2))
    results = optimize(["8p_gemm"], get_method(method, **SMALL_OPTIONS[method]), model, run,
                       budget=5, target="gpu", mode="interpret", trials=1, workers=2,
                       evaluator=evaluator)
    evals = samples_by_task(run)["8p_gemm"]
    assert sorted(e["sample"] for e in evals) == [0, 1, 2, 3, 4]
    assert len({e["step"] for e in evals}) == 5
    calls = events_of(run, "llm_call")
    kernel_calls = [c for c in calls if c["kind"] == "kernel" and "/retry" not in c["step"]]
    assert len(kernel_calls) == 5
    assert all(c["kind"] == "plan" for c in calls if c["step"].endswith("/plan"))
    assert len([c for c in results["8p_gemm"] if c.sample is not None]) == 5


def test_iterative_feeds_back_the_previous_failure(tmp_path, evaluator):
    run = RunDir.open(tmp_path / "run", {})
    model = get_model(script(tmp_path / "script", BROKEN, BROKEN_2))
    optimize(["8p_gemm"], get_method("iterative", chains=1), model, run, budget=3, target="gpu",
             mode="interpret", trials=1, workers=1, evaluator=evaluator)
    calls = {c["step"]: c for c in events_of(run, "llm_call")}
    evals = {e["step"]: e for e in events_of(run, "evaluation")}
    assert "previous attempt" not in calls["chain0/turn0"]["prompt"]
    for turn in (1, 2):
        prompt, previous = calls[f"chain0/turn{turn}"]["prompt"], evals[f"chain0/turn{turn - 1}"]
        assert previous["message"] and previous["message"] in prompt
        assert extract_code(calls[f"chain0/turn{turn - 1}"]["response"]).strip() in prompt
        assert "compile_error" in prompt


def test_resume_after_a_kill_loses_nothing_and_repeats_nothing(tmp_path, evaluator):
    spec = script(tmp_path / "script", *(broken(i) for i in range(4)))
    run = RunDir.open(tmp_path / "run", {})
    options = dict(budget=4, target="gpu", mode="interpret", trials=1, workers=1)
    method = get_method("iterative", chains=2)
    first = CountingEvaluator(evaluator)
    killed = ModelClient(KilledAfter(tmp_path / "script", 3), spec, retries=0)
    with pytest.raises(KeyboardInterrupt):
        optimize(["8p_gemm"], method, killed, run, evaluator=first, **options)
    assert len(events_of(run, "llm_call")) == 3 and first.calls == 3
    # The kill also tore a line and lost the last evaluation (its LLM call is kept).
    lines = (run.path / "events.jsonl").read_text().splitlines(keepends=True)
    last_eval = max(i for i, ln in enumerate(lines) if '"type": "evaluation"' in ln)
    del lines[last_eval]
    (run.path / "events.jsonl").write_text("".join(lines) + '{"type": "llm_ca')

    resumed = RunDir.open(tmp_path / "run", {})
    fresh = script(tmp_path / "fresh", broken(10)).removeprefix("scripted:")
    second, provider = CountingEvaluator(evaluator), Scripted(fresh)
    optimize(["8p_gemm"], method, ModelClient(provider, spec), resumed, evaluator=second, **options)
    assert provider.calls == 1  # only chain1/turn1 was never answered
    assert second.calls == 2    # the lost evaluation and the new one
    calls = [c["step"] for c in events_of(resumed, "llm_call")]
    evals = [e["step"] for e in events_of(resumed, "evaluation")]
    assert len(calls) == len(set(calls)) == 4
    assert len(evals) == len(set(evals)) == 4
    assert sorted(e["sample"] for e in samples_by_task(resumed)["8p_gemm"]) == [0, 1, 2, 3]

    # A finished task is not run again.
    third, provider = CountingEvaluator(evaluator), Scripted(str(tmp_path / "script"))
    results = optimize(["8p_gemm"], method, ModelClient(provider, spec), resumed, evaluator=third,
                       **options)
    assert provider.calls == 0 and third.calls == 0 and len(results["8p_gemm"]) == 4


def test_same_kernel_is_evaluated_once_per_run(tmp_path, evaluator):
    run = RunDir.open(tmp_path / "run", {})
    counting = CountingEvaluator(evaluator)
    optimize(["8p_gemm"], get_method("best_of_n"), get_model(script(tmp_path / "s", BROKEN)), run,
             budget=3, target="gpu", mode="interpret", trials=1, workers=2, evaluator=counting)
    evals = samples_by_task(run)["8p_gemm"]
    assert counting.calls == 1 and len(evals) == 3
    assert len({e["message"] for e in evals}) == 1
    assert sum("reused_from" in e for e in evals) == 2


def test_cli_optimize_record_replay_and_report(tmp_path):
    spec = script(tmp_path / "script", BROKEN, BROKEN_2)
    common = ["--tasks", "8p_gemm", "--budget", "2", "--mode", "interpret", "--trials", "1",
              "--target", "gpu", "--workers", "1", "--no-cache"]
    runner = CliRunner()
    result = runner.invoke(main, ["optimize", "--method", "best_of_n", "--model", spec, *common,
                                  "--out", str(tmp_path / "a"), "--record", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["optimize", "--method", "best_of_n", "--model",
                                  f"replay:{tmp_path / 'r.jsonl'}", *common, "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    answers = [sorted(c["response"] for c in events_of(tmp_path / d, "llm_call")) for d in ("a", "b")]
    assert answers[0] == answers[1] == sorted([BROKEN, BROKEN_2])
    report = runner.invoke(main, ["report", str(tmp_path / "b"), "--json"])
    summary = json.loads(report.stdout)
    assert summary["methods"]["best_of_n"]["samples"] == 2
    assert summary["methods"]["best_of_n"]["compile_rate"] == 0.0
    config = json.loads((tmp_path / "a" / "manifest.json").read_text())["config"]
    assert config["seeded"] is False and config["sampling"]["temperature"] is None
    for run_dir in ("a", "b"):  # scripted and replayed answers cost nothing: unpriced, not $0
        calls = events_of(tmp_path / run_dir, "llm_call")
        assert calls and all(c["cost"] is None and c["finish_reason"] == "stop" for c in calls)


@pytest.mark.parametrize("args, message", [
    (["--method", "nope"], "unknown method"),
    (["--method", "iterative", "-O", "beams=3"], "has no option 'beams'"),
    (["--method", "iterative", "-O", "chains=many"], "expected a int"),
    (["--method", "best_of_n", "--price", "cheap"], "is not IN,OUT"),
    (["--method", "evolve", "-O", "patch_probabilities=1"], "DIFF,FULL,CROSS"),
])
def test_cli_optimize_usage_errors(tmp_path, args, message):
    spec = script(tmp_path / "script", BROKEN)
    result = CliRunner().invoke(main, ["optimize", *args, "--model", spec, "--tasks", "8p_gemm",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_reasoning_flags_the_provider_cannot_send_are_usage_errors(tmp_path, monkeypatch):
    import sys
    import types

    monkeypatch.setitem(sys.modules, "openai", types.SimpleNamespace(OpenAI=lambda **kw: None))
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    result = CliRunner().invoke(main, ["optimize", "--method", "best_of_n", "--model", "openai:gpt-5",
                                       "--thinking-budget", "2048", "--tasks", "8p_gemm",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "--reasoning-effort, not --thinking-budget" in result.stderr
    assert not (tmp_path / "run").exists()


def test_feedback_carries_ir_facts_compile_time_and_verdict(tmp_path, evaluator):
    run = RunDir.open(tmp_path / "run", {})
    answer = f"```python\n{seed('12p_rmsnorm', 'gpu')}```"
    model = get_model(script(tmp_path / "script", answer, BROKEN))
    optimize(["12p_rmsnorm"], get_method("iterative", chains=1), model, run, budget=2,
             target="gpu", mode="interpret", trials=1, workers=1, evaluator=evaluator)
    first = next(e for e in events_of(run, "evaluation") if e["step"] == "chain0/turn0")
    assert first["status"] == "correct", first["message"]
    call = first["ir_facts"]["calls"][0]  # read from the evaluator's saved jaxpr
    assert call["grid"] and call["blocks"] and "num_warps" in call["params"]
    prompt = next(c for c in events_of(run, "llm_call") if c["step"] == "chain0/turn1")["prompt"]
    assert "What the evaluator saw: pallas_calls: 1; pallas_call #0: grid (" in prompt
    assert "compile time" in prompt and "## Profile" in prompt and "memory-bound" in prompt


def test_verdict_feedback_quotes_the_candidates_line():
    code = "import jax\n\ndef kernel(x):\n    y = x.reshape(5, 7)\n    return y\n"
    result = verdict("compile_error", stage="lower", message=(
        "Triton rule power_of_two: tensor reshape -> f32[5,7] at <kernel>:4: y = x.reshape(5, 7)"))
    assert error_lines(result.message, code) == [(4, "    y = x.reshape(5, 7)")]
    text = describe_verdict(result, code)
    assert "your line 4: y = x.reshape(5, 7)" in text
    assert "your line" not in describe_verdict(result.replace(message="SyntaxError at line 9"), code)
    frames = ["<kernel>:9 in kernel: return pl.pallas_call(_k, out_shape=o)(x)",
              "<kernel>:7 in _k: o_ref[...] = y.reshape(5, 7)"]
    located = describe_verdict(result.replace(candidate_frames=frames), code)
    assert "Where, in your kernel (outermost call first):\n  <kernel>:9 in kernel" in located
    assert located.rstrip().endswith("<kernel>:7 in _k: o_ref[...] = y.reshape(5, 7)")
    # the agent's key of the run's event (the answer hit the token limit), read back in extra
    truncated = describe_verdict(verdict("compile_error", stage="static", message="x",
                                         extra={"truncated": True}))
    assert "cut off at the output-token limit" in truncated


def test_cli_optimize_writes_the_best_kernel_of_each_task(tmp_path):
    code = seed("12p_rmsnorm", "tpu") + "# the model's variant of the seed\n"  # a seed verbatim
    answer = f"```python\n{code}```"  # would not go to best/ (tests/test_runs.py)
    spec = script(tmp_path / "script", BROKEN, answer)
    result = CliRunner().invoke(main, ["optimize", "--method", "best_of_n", "--model", spec,
                                       "--tasks", "12p_rmsnorm", "--budget", "2", "--mode", "interpret",
                                       "--trials", "1", "--workers", "1", "--no-cache",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "best" / "12p_rmsnorm.py").read_text() == code
    evals = events_of(tmp_path / "run", "evaluation")
    assert all(e["source_file"].startswith("sources/") and "source" not in e for e in evals)


def test_ir_facts_from_a_jaxpr():
    from agent_fakes import JAXPR

    facts = ir_facts(JAXPR)
    assert facts == {"calls": [{"grid": [4, 2], "blocks": [[256, 512], [None, 128]],
                                "params": "dimension_semantics=('parallel', 'arbitrary')"}]}


def test_a_refused_model_call_is_a_failed_sample_and_resume_does_not_repeat_it(tmp_path, evaluator):
    script(tmp_path / "script", BROKEN, BROKEN_2)
    run = RunDir.open(tmp_path / "run", {})
    provider = Refusing(tmp_path / "script", refuse="/s1")
    options = dict(budget=3, target="gpu", mode="interpret", trials=1, workers=1, evaluator=evaluator)
    optimize(["8p_gemm"], get_method("best_of_n"), ModelClient(provider, "refusing:x"), run, **options)
    refused = next(c for c in events_of(run, "llm_call") if c["step"] == "s1")
    assert refused["error"].startswith("refusing:x: RuntimeError: prompt is too long")
    assert refused["finish_reason"] == "error" and refused["status_code"] == 400
    failed = next(e for e in events_of(run, "evaluation") if e["step"] == "s1")
    assert failed["status"] == "compile_error" and "the model call failed" in failed["message"]
    assert len(events_of(run, "task_done")) == 1 and len(samples_by_task(run)["8p_gemm"]) == 3

    # a fresh run of the same directory (as after a kill before task_done) replays the refusal
    lines = (run.path / "events.jsonl").read_text().splitlines(keepends=True)
    (run.path / "events.jsonl").write_text("".join(ln for ln in lines if "task_done" not in ln))
    again = Refusing(tmp_path / "script", refuse="/s1")
    optimize(["8p_gemm"], get_method("best_of_n"), ModelClient(again, "refusing:x"),
             RunDir.open(tmp_path / "run", {}), **options)
    assert again.calls == []


def test_a_refusal_that_concerns_every_call_stops_the_run(tmp_path, evaluator):
    from jaxbench.llm import LLMError

    script(tmp_path / "script", BROKEN)
    run = RunDir.open(tmp_path / "run", {})
    provider = Refusing(tmp_path / "script", refuse="/s", status=401)
    with pytest.raises(LLMError, match="prompt is too long"):
        optimize(["8p_gemm"], get_method("best_of_n"), ModelClient(provider, "refusing:x"), run,
                 budget=2, target="gpu", mode="interpret", trials=1, workers=1, evaluator=evaluator)
    assert events_of(run, "task_done") == [] and events_of(run, "llm_call") == []


def test_a_truncated_answer_is_flagged_in_the_verdict_and_the_next_prompt(tmp_path, evaluator):
    from jaxbench.llm import Completion, Provider

    class Truncating(Provider):
        def complete(self, prompt, sampling, *, sample):  # noqa: ANN001, ANN201
            return Completion(text="```python\ndef kernel(x):\n    return pl.pallas_call(", model="t",
                              finish_reason="length")

    run = RunDir.open(tmp_path / "run", {})
    optimize(["8p_gemm"], get_method("iterative", chains=1), ModelClient(Truncating("t"), "t:t"),
             run, budget=2, target="gpu", mode="interpret", trials=1, workers=1, evaluator=evaluator)
    first = next(e for e in events_of(run, "evaluation") if e["step"] == "chain0/turn0")
    assert first["truncated"] is True
    calls = {c["step"]: c for c in events_of(run, "llm_call")}
    assert calls["chain0/turn0"]["finish_reason"] == "length"
    assert "cut off at the output-token limit" in calls["chain0/turn1"]["prompt"]


def test_task_statement_and_docs(tmp_path):
    task = get_task("8p_gemm")
    text = task_statement(task, "tpu")
    assert "def reference(a, b)" in text and "ops.matmul" in text and "def matmul" in text
    assert "at size small on a CPU" in text and "No timing is measured" in text
    assert "A: bfloat16[256, 512]" in text  # the evaluated size ...
    assert "Size full (the benchmark times this size)" in text and "A: bfloat16[8192, 8192]" in text
    assert "compute-bound**" in text and "## Profile" in text
    assert 'TARGET = "tpu"' in text and "interpret" in text and "pallas_call" in text
    assert "Reference documentation" not in text
    full = task_statement(task, "gpu", size="full", mode="device", device_kind="NVIDIA H100 80GB HBM3")
    assert "at size full on the GPU itself" in full and "timed against" in full
    assert "Size small:" in full and "NVIDIA H100" in full
    assert "compiler_params=plgpu.CompilerParams(" in full

    from jaxbench.agents.base import Budget, Context, Journal

    ctx = Context(task=task, method="m",
                  settings=Settings.of(target="gpu", mode="interpret", size="small", trials=1),
                  docs=True, model=None, evaluator=None, run=None, budget=Budget(1), pool=None,
                  journal=Journal(), eval_slots=threading.Semaphore(1))
    prompt = ctx.prompt()
    assert "power-of-two" in prompt and "plgpu.CompilerParams" in prompt and "```python" in prompt
    assert "<!-- check" not in prompt and "jaxbench-docs" not in prompt
    assert "example_matmul" in prompt.docs and "triton_sizes" in prompt.docs
    assert prompt.rstrip().endswith("(no other code blocks).")


def test_gelu_tasks_say_how_to_compute_the_exact_gelu_in_a_kernel():
    task = get_task("47k_matmul_add_swish_tanh_gelu_hardtanh")
    assert "`jax.lax.erf` lowers" in task_statement(task, "tpu")
    assert "Triton lowers neither erf nor erfc" in task_statement(task, "gpu")
    assert "erf" not in task_statement(get_task("12p_rmsnorm"), "tpu").split("## Kernel contract")[1]
    tanh_gelu = get_task("35k_gemm_scaling_hardtanh_gelu")  # approximate=True: tanh, no erf
    assert "exact GELU" not in task_statement(tanh_gelu, "gpu")


def test_reference_source_of_every_kind_of_reference():
    from jaxbench.agents.prompts import reference_source

    source = reference_source(get_task("7p_ragged_paged_attention"))  # a closure (indented)
    assert "def _window_reference(" in source and "qmax_of = _qmax" in source
    assert "def _qmax(" in source and source.rstrip().endswith("num_seqs, qmax)")
    assert "EPS = 1e-05" in reference_source(get_task("12p_rmsnorm"))  # module constants
    linear = reference_source(get_task("47k_matmul_add_swish_tanh_gelu_hardtanh"))
    assert linear.index("def matmul(") < linear.index("def linear(")  # helpers of helpers first


def test_describe_verdict():
    incorrect = verdict("incorrect", stage="correct", max_abs_err=0.5, rel_err=0.1, message=(
        "output: 10 of 100 elements exceed ...; worst at (3, 4): got 1, truth 2"))
    text = describe_verdict(incorrect)
    assert "worst at (3, 4)" in text and "0.5" in text and "incorrect" in text
    timed = verdict("correct", stage="time", max_abs_err=0.001, speedup=1.25, t_ref_ms=2.5,
                    t_kernel_ms=2.0)
    assert "1.250x" in describe_verdict(timed)
    assert "not measured" in describe_verdict(timed.replace(speedup=None))


KERNEL_MODULE = "import jax\nTARGET = 'tpu'\n\ndef kernel(x):\n    return pl.pallas_call(f)(x)"


@pytest.mark.parametrize("answer", [
    f"Here:\n```python\n{KERNEL_MODULE}\n```\nUsage:\n```python\nprint(kernel(x))\n```\n",  # usage after
    f"```python\nx = jnp.ones(4)\n```\nThe kernel:\n```python\n{KERNEL_MODULE}\n```",      # example before
    f"```python\n{KERNEL_MODULE}\n",                                                        # unclosed
    f"~~~python\n{KERNEL_MODULE}\n~~~\n",                                                   # tildes
    f"```python3\n{KERNEL_MODULE}\n```",                                                    # python3
    "```py\r\n" + KERNEL_MODULE.replace("\n", "\r\n") + "\r\n```\r\n",                      # CRLF
    f"````python\n{KERNEL_MODULE}\n````",                                                   # 4 backticks
    f"```\n{KERNEL_MODULE}\n```",                                                           # no language
])
def test_extract_code_finds_the_kernel_module(answer):
    assert extract_code(answer) == KERNEL_MODULE + "\n"


def test_extract_code_simple_cases():
    assert extract_code("a\n```python\nx = 1\n```\nb\n```python\ny = 2\n```") == "y = 2\n"
    assert extract_code("```\nz = 3\n```") == "z = 3\n"
    assert extract_code("def kernel(a):\n    return a") == "def kernel(a):\n    return a\n"
    assert extract_code("```bash\npip install jax\n```\nno python here") != "pip install jax\n"


def test_apply_edits():
    code = "def kernel(a):\n    x = a + 1\n    return x\n"
    edit = "<<<<<<< SEARCH\n    x = a + 1\n=======\n    x = a + 2\n>>>>>>> REPLACE\n"
    assert apply_edits(code, edit) == "def kernel(a):\n    x = a + 2\n    return x\n"
    with pytest.raises(CandidateError, match="not found"):
        apply_edits(code, edit.replace("a + 1", "a + 9"))
    with pytest.raises(CandidateError, match="found 2 times"):
        apply_edits(code + "    x = a + 1\n", edit)
    assert apply_edits(code, "```python\nnew = 1\n```") == "new = 1\n"  # a full rewrite
    with pytest.raises(CandidateError):
        apply_edits(code, "I would change the block size.")


def test_method_options():
    assert get_method("autocomp").options == {
        "beam_width": 4, "plans": 4, "implementations": 2, "menu_dropout": 0.25,
        "translate_threshold": 1.2, "invent_probability": 0.2, "rounds": 0, "translate_rounds": 0,
        "translate_progress": False, "preset": ""}
    assert get_method("evolve", islands="3").islands == 3
    with pytest.raises(ValueError, match="unknown method"):
        get_method("nope")
    with pytest.raises(ValueError, match="seed_islands"):
        get_method("evolve", islands=2, seed_islands=3)
    with pytest.raises(ValueError, match="DIFF,FULL,CROSS"):
        get_method("evolve", patch_probabilities="1,2")
    assert get_method("evolve").seeded and not get_method("evolve", seed_islands=0).seeded
    assert not get_method("best_of_n").seeded
