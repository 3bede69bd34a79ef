"""Every method over every task of every suite, for both targets, with a scripted model and an
instant evaluator: every prompt builds, says the right size and contract, carries its docs;
a whole suite resumes after a kill without losing or repeating a step; tasks run
concurrently within the limits on model calls and evaluations."""

from __future__ import annotations

import time

import pytest
from agent_fakes import FakeEvaluator, KilledAfter, events_of, kernels, samples_by_task, script

from jaxbench.agents import METHODS, get_method, optimize
from jaxbench.llm import ModelClient, get_model
from jaxbench.llm.scripted import Scripted
from jaxbench.runs import RunDir
from jaxbench.tasks import list_tasks

SMALL = {"best_of_n": {}, "iterative": {}, "autocomp": {"plans": 1},
         "evolve": {"islands": 2, "children": 1}}


@pytest.mark.parametrize("target", ["tpu", "gpu"])
@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_prompts_every_task(method, target, tmp_path):
    tasks = [t.id for t in list_tasks()]  # every suite, pallasbench included as it grows
    run = RunDir.open(tmp_path / "run", {})
    model = get_model(script(tmp_path / "s", *kernels(target, 7)))
    optimize(tasks, get_method(method, **SMALL[method]), model, run, budget=2, target=target,
             size="small", mode="interpret", trials=1, docs=True, workers=2,
             evaluator=FakeEvaluator())
    done = {e["task"] for e in events_of(run, "task_done")}
    assert done == set(tasks)
    calls = events_of(run, "llm_call")
    assert {c["task"] for c in calls} == set(tasks)
    for call in calls:
        prompt = call["prompt"]
        assert f"## Task {call['task']}\n" in prompt and "def reference(" in prompt
        assert f'TARGET = "{target}"' in prompt
        assert "This run evaluates the kernel at size small on a CPU" in prompt
        assert "## Profile" in prompt and "-bound**" in prompt
        assert call["docs"] and "Reference documentation" in prompt
        if target == "gpu":
            assert "compiler_params=plgpu.CompilerParams(" in prompt
            assert "rules_tpu" not in prompt and "pltpu.CompilerParams" not in prompt
    by_task = samples_by_task(run)
    assert all(sorted(e["sample"] for e in by_task[t]) == [0, 1] for t in tasks)
    if method == "evolve":  # every task's shipped seed for the target is the first population
        seeds = {e["task"]: e for e in events_of(run, "evaluation") if e["origin"] == "seed"}
        assert set(seeds) == set(tasks)
        assert all(e["step"] == f"seed/seed_{target}" and e["sample"] is None for e in seeds.values())


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_whole_suite_resumes_after_a_kill(method, tmp_path):
    tasks = [t.id for t in list_tasks("jaxbench")]
    directory = tmp_path / "s"
    spec = script(directory, *kernels("tpu", 11))
    options = dict(budget=3, target="tpu", mode="interpret", trials=1, workers=3)
    run = RunDir.open(tmp_path / "run", {})
    killed = ModelClient(KilledAfter(directory, 60), spec, retries=0)
    with pytest.raises(KeyboardInterrupt):
        optimize(tasks, get_method(method, **SMALL[method]), killed, run,
                 evaluator=FakeEvaluator(), **options)
    before = events_of(run, "llm_call")
    assert len(before) == 60
    finished = {e["task"] for e in events_of(run, "task_done")}
    assert len(finished) < len(tasks)

    resumed = RunDir.open(tmp_path / "run", {})
    provider = Scripted(str(directory))
    optimize(tasks, get_method(method, **SMALL[method]), ModelClient(provider, spec), resumed,
             evaluator=FakeEvaluator(), **options)
    calls = [(c["task"], c["step"]) for c in events_of(resumed, "llm_call")]
    assert len(calls) == len(set(calls))  # nothing asked twice
    assert provider.calls == len(calls) - 60  # nothing lost, nothing repeated
    done = [e["task"] for e in events_of(resumed, "task_done")]
    assert sorted(done) == sorted(tasks)  # each task finished exactly once
    by_task = samples_by_task(resumed)
    assert all(sorted(e["sample"] for e in by_task[t]) == [0, 1, 2] for t in tasks)
    evals = [(e["task"], e["step"]) for e in events_of(resumed, "evaluation")]
    assert len(evals) == len(set(evals))


def test_tasks_run_concurrently_within_the_limits(tmp_path):
    """Chains of one are strictly sequential within a task; across tasks they overlap. Counted,
    not timed: the first model call waits (at most 60 s) until a call of another task joins it."""
    import re
    import threading

    from jaxbench.llm import Completion, Provider

    class Overlapping(Provider):
        def __init__(self) -> None:
            super().__init__("overlapping")
            self.lock = threading.Condition()
            self.in_flight: list[str] = []
            self.most = self.n = 0
            self.same_task_overlap = False
            self.first_waited = False
            self.answers = kernels("tpu", 5)

        def complete(self, prompt, sampling, *, sample):  # noqa: ANN001, ANN201
            task = re.search(r"## Task (\S+)\n", prompt).group(1)
            with self.lock:
                self.same_task_overlap |= task in self.in_flight
                self.in_flight.append(task)
                self.most = max(self.most, len(self.in_flight))
                self.n += 1
                text = self.answers[self.n % 5]
                self.lock.notify_all()
                if not self.first_waited:
                    self.first_waited = True
                    self.lock.wait_for(lambda: self.most >= 2, timeout=60)
            with self.lock:
                self.in_flight.remove(task)
            return Completion(text=text, model="x")

    tasks = ["8p_gemm", "12p_rmsnorm", "13p_cross_entropy", "1p_flash_attention"]
    turns = 3
    provider = Overlapping()
    model = ModelClient(provider, "overlapping:x", max_concurrency=8)
    evaluator = FakeEvaluator(seconds=0.05)
    run = RunDir.open(tmp_path / "run", {})
    optimize(tasks, get_method("iterative", chains=1), model, run, budget=turns, target="tpu",
             mode="interpret", trials=1, workers=2, evaluator=evaluator)
    assert provider.most >= 2, "tasks never overlapped"
    assert not provider.same_task_overlap, "a chain of one ran two model calls at once"
    assert provider.n == len(tasks) * turns
    assert evaluator.max_in_flight <= 2  # --workers bounds evaluations in flight
    assert len(events_of(run, "task_done")) == len(tasks)


def test_model_concurrency_bounds_calls_across_tasks(tmp_path):
    import threading

    from jaxbench.llm import Completion, Provider

    class Counting(Provider):
        def __init__(self) -> None:
            super().__init__("counting")
            self.now = self.most = 0
            self.lock = threading.Lock()
            self.answers = kernels("tpu", 3)
            self.n = 0

        def complete(self, prompt, sampling, *, sample):  # noqa: ANN001, ANN201
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
                self.n += 1
                text = self.answers[self.n % 3]
            time.sleep(0.05)
            with self.lock:
                self.now -= 1
            return Completion(text=text, model="x")

    provider = Counting()
    model = ModelClient(provider, "counting:x", max_concurrency=3)
    run = RunDir.open(tmp_path / "run", {})
    optimize(["8p_gemm", "12p_rmsnorm", "13p_cross_entropy", "14p_ragged_dot", "2p_gqa_attention"],
             get_method("best_of_n"), model, run, budget=4, target="tpu", mode="interpret",
             trials=1, workers=2, evaluator=FakeEvaluator())
    assert provider.most == 3 and provider.n == 20
