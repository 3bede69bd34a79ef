"""What every method shares: the method registry, candidates, the sample budget and
the context a method runs in (model, evaluator, run directory, thread pool).

Resuming: a method's control flow depends only on the answers and verdicts it sees,
and every LLM call and evaluation has a deterministic step name (``round2/beam1``).
A resumed run executes the method again from the start; steps already in the run's
events are answered from there (no model call, no evaluation), so a killed run loses
nothing and repeats nothing. Methods therefore work in rounds: budget slots are
taken in the main thread, the round's steps run in the thread pool, and the next
decision looks at the results in step order, never in completion order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jaxbench.agents.prompts import ANSWER_FORMAT, docs_block, extract_code, task_statement
from jaxbench.evaluator.result import new_result, source_sha256
from jaxbench.llm import ModelClient, Sampling
from jaxbench.runs import RunDir
from jaxbench.tasks import Task

T = TypeVar("T")
R = TypeVar("R")

# Higher is closer to a working kernel; ranks failed candidates among themselves.
STATUS_RANK = {"correct": 7, "incorrect": 6, "runtime_error": 5, "timeout": 4, "crashed": 3,
               "no_pallas": 2, "rejected": 1, "compile_error": 0}


class CandidateError(Exception):
    """An answer that yields no kernel to evaluate (e.g. an edit that does not apply)."""


@dataclass
class Candidate:
    """One evaluated kernel: the step that produced it, its budget slot and its verdict."""

    step: str
    sample: int | None  # budget slot; None for seed kernels (free)
    code: str
    result: dict[str, Any]
    parent: str | None = None

    @property
    def status(self) -> str:
        return self.result["status"]

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    @property
    def speedup(self) -> float | None:
        return self.result.get("speedup")

    def fitness(self) -> tuple[float, float, float]:
        """Sort key, higher is better: status, then speedup, then smaller error."""
        err = self.result.get("max_abs_err")
        return (STATUS_RANK.get(self.status, -1), self.speedup or 0.0,
                -err if err is not None else float("-inf"))


def best_first(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Candidates by fitness, best first (stable, so earlier wins ties)."""
    return sorted(candidates, key=lambda c: c.fitness(), reverse=True)


class Budget:
    """The task's sample budget: candidate kernels evaluated (seeds are free)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0

    @property
    def remaining(self) -> int:
        return self.total - self.used

    def take(self, n: int) -> list[int]:
        """Reserves up to ``n`` slots (fewer when the budget runs out); returns their indices."""
        n = max(0, min(n, self.remaining))
        slots = list(range(self.used, self.used + n))
        self.used += n
        return slots


class Journal:
    """Finished LLM calls and evaluations of a run, by (task, method, step), for resuming;
    and verdicts by (task, kernel hash), so a kernel proposed twice is evaluated once."""

    def __init__(self, events: Iterable[dict[str, Any]] = ()) -> None:
        self.calls: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.evaluations: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.verdicts: dict[tuple[str, str], dict[str, Any]] = {}
        self.done: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.append_lock = threading.Lock()  # one event line at a time from the thread pool
        self._kernel_locks: dict[tuple[str, str], threading.Lock] = {}
        for event in events:
            kind = event.get("type")
            if kind == "llm_call":
                self.calls[(event["task"], event["method"], event["step"])] = event
            elif kind == "evaluation" and "step" in event:
                self.evaluations[(event["task"], event["method"], event["step"])] = event
                if not event.get("synthetic"):
                    self.verdicts[(event["task"], event["candidate_sha256"])] = event
            elif kind == "task_done":
                self.done[(event["task"], event["method"])] = event

    def kernel_lock(self, task_id: str, sha: str) -> threading.Lock:
        """Serialises evaluations of one kernel, so concurrent duplicates wait for the first."""
        with self._lock:
            return self._kernel_locks.setdefault((task_id, sha), threading.Lock())


@dataclass
class Context:
    """Everything a method needs for one task. Methods call :meth:`propose`, :meth:`ask`,
    :meth:`evaluate` and :meth:`map`; the context keeps the events and the budget."""

    task: Task
    method: str
    target: str
    mode: str
    size: str
    trials: int
    docs: bool
    model: ModelClient
    evaluator: Any
    run: RunDir
    budget: Budget
    pool: ThreadPoolExecutor
    journal: Journal
    eval_slots: threading.Semaphore
    sampling: Sampling | None = None
    on_candidate: Callable[[Candidate], None] | None = None
    candidates: list[Candidate] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        text = task_statement(self.task, self.target)
        self.statement = text + ("\n\n" + docs_block(self.target) if self.docs else "")

    # -- prompts ---------------------------------------------------------------------------

    def prompt(self, *sections: str, answer: bool = True) -> str:
        """The task statement (and docs), then the method's sections, then the answer format."""
        parts = [self.statement, *[s.strip() for s in sections if s]]
        if answer:
            parts.append(ANSWER_FORMAT)
        return "\n\n".join(parts)

    # -- model and evaluator, with replay from the journal ----------------------------------

    def ask(self, step: str, prompt: str, sample: int | None = None) -> str:
        """The model's answer to ``prompt`` at ``step`` (replayed when the run already has it)."""
        key = (self.task.id, self.method, step)
        if key in self.journal.calls:
            return self.journal.calls[key]["response"]
        sample_id = f"{self.task.id}/{self.method}/{step}"
        completion = self.model.complete(prompt, sample=sample_id, sampling=self.sampling)
        self._append({
            "type": "llm_call", "task": self.task.id, "method": self.method, "step": step,
            "sample": sample, "sample_id": sample_id, "model": self.model.spec,
            "prompt": prompt, "response": completion.text,
            "input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens,
            "cost": completion.cost, "latency_s": completion.latency_s, "cached": completion.cached,
        })
        return completion.text

    def evaluate(self, step: str, code: str, sample: int | None, *, parent: str | None = None,
                 origin: str = "", failure: str | None = None) -> Candidate:
        """Evaluates ``code`` (or records ``failure`` as a compile error without running it)."""
        key = (self.task.id, self.method, step)
        sha = source_sha256(code)
        past = self.journal.evaluations.get(key)
        if past is not None and past.get("candidate_sha256") == sha:
            result = past
        elif failure is not None:
            result = new_result(self.task.id, self.target, self.mode, self.size, code)
            result.update(status="compile_error", stage="static", message=failure, synthetic=True)
        else:
            with self.journal.kernel_lock(self.task.id, sha):
                known = self.journal.verdicts.get((self.task.id, sha))
                if known is not None:
                    result = {k: v for k, v in known.items() if k != "time"}
                    result["reused_from"] = known["step"]
                else:
                    with self.eval_slots:
                        result = self.evaluator.evaluate(code, self.task.id, target=self.target,
                                                         mode=self.mode, size=self.size,
                                                         trials=self.trials)
                    result["step"] = step
                    self.journal.verdicts[(self.task.id, sha)] = result
        if result is not past:
            result = {**result, "task": self.task.id, "method": self.method, "step": step,
                      "sample": sample, "candidate_sha256": sha, "parent": parent,
                      "origin": origin, "source": code}
            self._append(result)
        candidate = Candidate(step, sample, code, result, parent)
        with self._lock:
            self.candidates.append(candidate)
        if self.on_candidate is not None:
            self.on_candidate(candidate)
        return candidate

    def _append(self, event: dict[str, Any]) -> None:
        with self.journal.append_lock:
            self.run.append(event)

    def propose(self, step: str, prompt: str, sample: int, *, parent: Candidate | None = None,
                origin: str = "", to_code: Callable[[str], str] = extract_code) -> Candidate:
        """Ask, turn the answer into code, evaluate: the usual sample."""
        answer = self.ask(step, prompt, sample)
        try:
            code, failure = to_code(answer), None
        except CandidateError as exc:
            code, failure = answer, str(exc)
        return self.evaluate(step, code, sample, parent=parent.step if parent else None,
                             origin=origin, failure=failure)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Runs ``fn`` over ``items`` in the thread pool; results in the order of ``items``."""
        return list(self.pool.map(fn, items))

    def seed_candidates(self) -> list[Candidate]:
        """The task's shipped seed kernels for this target, evaluated (free of budget)."""
        seeds = []
        for (kind, target), path in sorted(self.task.kernel_files().items()):
            if kind == "seed" and target == self.target:
                seeds.append(self.evaluate(f"seed/{kind}_{target}", path.read_text(), None,
                                           origin="seed"))
        return seeds


class Method:
    """An optimization method. Subclasses set ``name`` (via :func:`register_method`),
    list their options with defaults in ``defaults`` and implement :meth:`run`."""

    name = ""
    defaults: dict[str, Any] = {}

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            known = ", ".join(sorted(self.defaults)) or "none"
            raise ValueError(f"method {self.name} has no option {unknown[0]!r} (options: {known})")
        self.options = dict(self.defaults)
        for key, value in options.items():
            self.options[key] = _coerce(value, self.defaults[key], key)

    def __getattr__(self, name: str) -> Any:
        options = self.__dict__.get("options", {})
        if name in options:
            return options[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.options.items()))
        return f"{self.name}({args})"

    def run(self, ctx: Context) -> None:
        raise NotImplementedError


def _coerce(value: Any, default: Any, key: str) -> Any:
    """Options arrive as strings from the command line; give them the default's type."""
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return value.lower() in ("true", "1", "yes")
        return type(default)(value)
    except ValueError:
        raise ValueError(f"option {key}={value!r}: expected a {type(default).__name__}") from None


METHODS: dict[str, type[Method]] = {}


def register_method(name: str) -> Callable[[type[Method]], type[Method]]:
    """Class decorator: makes a method available by name (``--method NAME``)."""

    def decorate(cls: type[Method]) -> type[Method]:
        cls.name = name
        METHODS[name] = cls
        return cls

    return decorate
