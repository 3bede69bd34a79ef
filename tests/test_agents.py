"""Optimizing methods end to end with scripted models: events, budgets, feedback, resume,
the CLI, prompts and the docs pack."""

from __future__ import annotations

import ast
import json
import re
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner

from jaxbench.agents import METHODS, get_method, optimize
from jaxbench.agents.base import CandidateError
from jaxbench.agents.evolve import apply_edits
from jaxbench.agents.prompts import DOCS_DIR, describe_verdict, docs_versions, extract_code, task_statement
from jaxbench.cli import main
from jaxbench.llm import Completion, ModelClient, Provider, get_model
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
                 "autocomp": {"beam_width": 2}, "evolve": {"islands": 2, "children": 2}}


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
        model = get_model(script(tmp_path / task_id, BROKEN, seed(task_id, "gpu")))
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
    kernel_calls = [c for c in events_of(run, "llm_call") if not c["step"].endswith("/plan")]
    assert len(kernel_calls) == 5
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


class KilledAfter(Provider):
    """A scripted model that dies (like a killed process) after ``n`` answers."""

    def __init__(self, directory: Path, n: int) -> None:
        super().__init__("killed")
        self.inner, self.n, self.calls = Scripted(str(directory)), n, 0

    def complete(self, prompt, sampling, *, sample) -> Completion:  # noqa: ANN001
        self.calls += 1
        if self.calls > self.n:
            raise KeyboardInterrupt  # not retried, not caught: the run stops here
        return self.inner.complete(prompt, sampling, sample=sample)


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


@pytest.mark.parametrize("args, message", [
    (["--method", "nope"], "unknown method"),
    (["--method", "iterative", "-O", "beams=3"], "has no option 'beams'"),
    (["--method", "iterative", "-O", "chains=many"], "expected a int"),
])
def test_cli_optimize_usage_errors(tmp_path, args, message):
    spec = script(tmp_path / "script", BROKEN)
    result = CliRunner().invoke(main, ["optimize", *args, "--model", spec, "--tasks", "8p_gemm",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_task_statement_and_docs(tmp_path):
    task = get_task("8p_gemm")
    text = task_statement(task, "tpu")
    assert "def reference(a, b)" in text and "ops.matmul" in text and "def matmul" in text
    assert "A: bfloat16[8192, 8192]" in text and "bfloat16[8192, 28672]" in text  # full size
    assert 'TARGET = "tpu"' in text and "interpret" in text and "pallas_call" in text
    assert "Reference documentation" not in text

    from jaxbench.agents.base import Budget, Context, Journal

    ctx = Context(task=task, method="m", target="gpu", mode="interpret", size="small", trials=1,
                  docs=True, model=None, evaluator=None, run=None, budget=Budget(1), pool=None,
                  journal=Journal(), eval_slots=threading.Semaphore(1))
    prompt = ctx.prompt()
    assert "power-of-two" in prompt and "plgpu.CompilerParams" in prompt and "```python" in prompt
    assert prompt.rstrip().endswith("(no other code blocks).")


def test_docs_describe_the_installed_jax():
    versions = docs_versions()
    assert versions and set(versions.values()) == {jax.__version__}, versions
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu
    from jax.experimental.pallas import triton as plgpu

    modules = {"pl": pl, "pltpu": pltpu, "plgpu": plgpu}
    for path in DOCS_DIR.glob("*.md"):
        for alias, name in re.findall(r"\b(pl|pltpu|plgpu)\.([A-Za-z_]\w*)", path.read_text()):
            assert hasattr(modules[alias], name), f"{path.name}: {alias}.{name} is not in jax"


@pytest.mark.parametrize("target, kind", [("tpu", "tpu"), ("gpu", "generic")])
def test_docs_worked_examples_compute_a_matmul(target, kind):
    from jaxbench.backends import interpret_mode

    text = (DOCS_DIR / f"example_{target}.md").read_text()
    code = extract_code(text)
    ast.parse(code)
    namespace: dict = {}
    exec(compile(code, f"example_{target}", "exec"), namespace)  # noqa: S102
    a = jax.random.normal(jax.random.key(0), (128, 256), jnp.bfloat16)
    b = jax.random.normal(jax.random.key(1), (256, 256), jnp.bfloat16)
    with interpret_mode(kind):
        out = namespace["kernel"](a, b)
    ref = jnp.matmul(a, b, preferred_element_type=jnp.float32)
    assert out.shape == ref.shape and out.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(ref), rtol=2e-2, atol=0.3)


def test_describe_verdict():
    incorrect = {"status": "incorrect", "stage": "correct", "max_abs_err": 0.5, "rel_err": 0.1,
                 "message": "output: 10 of 100 elements exceed ...; worst at (3, 4): got 1, truth 2"}
    text = describe_verdict(incorrect)
    assert "worst at (3, 4)" in text and "0.5" in text and "incorrect" in text
    timed = {"status": "correct", "stage": "time", "max_abs_err": 0.001, "speedup": 1.25,
             "t_ref_ms": 2.5, "t_kernel_ms": 2.0}
    assert "1.250x" in describe_verdict(timed)
    assert "not measured" in describe_verdict({**timed, "speedup": None})


def test_extract_code():
    assert extract_code("a\n```python\nx = 1\n```\nb\n```python\ny = 2\n```") == "y = 2\n"
    assert extract_code("```\nz = 3\n```") == "z = 3\n"
    assert extract_code("def kernel(a):\n    return a") == "def kernel(a):\n    return a\n"


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
    assert get_method("autocomp").options == {"beam_width": 4, "translation_rounds": 4,
                                              "optimization_rounds": 4}
    assert get_method("evolve", islands="3").islands == 3
    with pytest.raises(ValueError, match="unknown method"):
        get_method("nope")
