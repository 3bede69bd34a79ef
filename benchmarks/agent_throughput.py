"""Throughput of ``jaxbench optimize`` at the paper's budgets, without a model or a device.

A scripted model that sleeps like a real one (``--latency`` seconds per call, a distinct
kernel each time) and a stand-in evaluator that sleeps ``--eval-seconds`` per kernel drive
the real driver, methods, run directory (fsynced events) and prompts. The figure to
compare is the bound set by the limits: at most ``--concurrency`` model calls and
``--workers`` evaluations in flight, so samples per second cannot exceed
``min(concurrency / latency, workers / eval_seconds)``.

    python benchmarks/agent_throughput.py                       # 50 tasks x 144, every method
    python benchmarks/agent_throughput.py --tasks 5 --parallel-tasks 1   # one task at a time

Prints one JSON line per method and a table.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from jaxbench.agents import METHODS, get_method, optimize  # noqa: E402
from jaxbench.backends.host import versions  # noqa: E402
from jaxbench.contract import new_result  # noqa: E402
from jaxbench.llm import Completion, ModelClient, Provider, Sampling  # noqa: E402
from jaxbench.runs import RunDir  # noqa: E402
from jaxbench.tasks import list_tasks  # noqa: E402


class SleepingModel(Provider):
    """Answers every call after ``latency`` seconds with a new, distinct kernel."""

    def __init__(self, latency: float) -> None:
        super().__init__("sleeping")
        self.latency = latency
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, prompt: str, sampling: Sampling, *, sample: str) -> Completion:
        with self._lock:
            self.calls += 1
            n = self.calls
        time.sleep(self.latency)
        text = ("```python\nimport jax\nfrom jax.experimental import pallas as pl\nTARGET = 'tpu'\n"
                f"VARIANT = {n}\n\ndef kernel(*args):\n"
                "    return pl.pallas_call(lambda *r: None)(*args)\n```\n")
        return Completion(text=text, model="sleeping", input_tokens=len(prompt) // 4,
                          output_tokens=len(text) // 4, finish_reason="stop")


class SleepingEvaluator:
    """Takes ``seconds`` per kernel; every third kernel is correct."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        self._lock = threading.Lock()

    def evaluate(self, code: str, task_id: str, *, target: str = "tpu", mode: str = "interpret",
                 size: str = "small", trials: int = 1, **_: object) -> dict:
        with self._lock:
            self.calls += 1
            n = self.calls
        time.sleep(self.seconds)
        result = new_result(task_id, target, mode, size, code, versions=versions())
        if n % 3 == 0:
            result.update(status="correct", stage="correct", max_abs_err=1e-3)
        else:
            result.update(status="compile_error", stage="lower", message="bad block shape")
        return result


def measure(method: str, tasks: list[str], args: argparse.Namespace) -> dict:
    provider = SleepingModel(args.latency)
    model = ModelClient(provider, "sleeping:model", max_concurrency=args.concurrency)
    evaluator = SleepingEvaluator(args.eval_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir.open(Path(tmp) / "run", {})
        started = time.monotonic()
        optimize(tasks, get_method(method), model, run, budget=args.budget, target="tpu",
                 mode="interpret", trials=1, docs=args.docs, workers=args.workers,
                 parallel_tasks=args.parallel_tasks or None, evaluator=evaluator, ir_feedback=False)
        wall = time.monotonic() - started
    samples = len(tasks) * args.budget
    bound = min(args.concurrency / args.latency, args.workers / args.eval_seconds)
    # model calls per sample (autocomp plans, evolve novelty retries) lower the model's bound
    per_sample = provider.calls / samples
    bound_calls = min(args.concurrency / (args.latency * per_sample), args.workers / args.eval_seconds)
    return {"method": method, "tasks": len(tasks), "budget": args.budget, "samples": samples,
            "model_calls": provider.calls, "evaluations": evaluator.calls, "wall_s": round(wall, 1),
            "samples_per_s": round(samples / wall, 1), "bound_per_s": round(bound_calls, 1),
            "fraction_of_bound": round(samples / wall / bound_calls, 2),
            "naive_bound_per_s": round(bound, 1), "latency_s": args.latency,
            "eval_s": args.eval_seconds, "concurrency": args.concurrency, "workers": args.workers,
            "parallel_tasks": args.parallel_tasks or min(len(tasks), 64), "docs": args.docs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=50, help="first N tasks of the jaxbench suite")
    parser.add_argument("--budget", type=int, default=144)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model call")
    parser.add_argument("--eval-seconds", type=float, default=0.05, help="seconds per evaluation")
    parser.add_argument("--concurrency", type=int, default=64, help="model calls in flight")
    parser.add_argument("--workers", type=int, default=8, help="evaluations in flight")
    parser.add_argument("--parallel-tasks", type=int, default=0, help="0: all tasks at once")
    parser.add_argument("--methods", default=",".join(sorted(METHODS)))
    parser.add_argument("--docs", action="store_true")
    args = parser.parse_args()
    tasks = [t.id for t in list_tasks("jaxbench")][: args.tasks]
    rows = []
    for method in args.methods.split(","):
        row = measure(method, tasks, args)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(f"\n{'method':<10} {'samples':>8} {'calls':>7} {'wall s':>8} {'samples/s':>10} "
          f"{'bound/s':>8} {'of bound':>9}")
    for r in rows:
        print(f"{r['method']:<10} {r['samples']:>8} {r['model_calls']:>7} {r['wall_s']:>8} "
              f"{r['samples_per_s']:>10} {r['bound_per_s']:>8} {r['fraction_of_bound']:>9}")


if __name__ == "__main__":
    main()
