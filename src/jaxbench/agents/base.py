"""What every method shares: the method registry, candidates, the sample budget and
the context a method runs in (model, evaluator, run directory, thread pool).

Resuming: a method's control flow depends only on the answers and verdicts it sees,
and every LLM call and evaluation has a deterministic step name (``round2/beam1``).
A resumed run executes the method again from the start; steps already in the run's
events are answered from there (no model call, no evaluation), so a killed run loses
nothing and repeats nothing. Methods therefore work in rounds: budget slots are
taken in the task's thread, the round's steps run in the shared thread pool, and the next
decision looks at the results in step order, never in completion order. Random draws
are seeded from the task and the step, never from the clock.

A model call the provider refuses for good (context too long, an unsupported
parameter) is a failed sample, recorded with its error: the run goes on, and resume
replays the failure instead of repeating the call.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from jaxbench.agents import docs_pack
from jaxbench.agents.prompts import (
    ANSWER_FORMAT,
    PROMPT_MODES,
    extract_code,
    ir_facts,
    reference_source,
    task_statement,
)
from jaxbench.backends.host import versions
from jaxbench.contract import (
    FIELD_TIME,
    STATUS_RANKING,
    EvaluationResult,
    Settings,
    Stage,
    Status,
    source_sha256,
    status_rank,
)
from jaxbench.executors import SupportsEvaluate, evaluate_with
from jaxbench.llm import LLMCancelled, LLMRequestError, ModelClient, Sampling
from jaxbench.runs import RunDir
from jaxbench.tasks import Task

T = TypeVar("T")
R = TypeVar("R")

# Higher is closer to a working kernel; ranks failed candidates among themselves (the schema's
# ranking: jaxbench.contract.STATUS_RANKING, by the name methods have used).
STATUS_RANK = {status: status_rank(status) for status in STATUS_RANKING}


class CandidateError(Exception):
    """An answer that yields no kernel to evaluate (e.g. an edit that does not apply)."""


@dataclass
class Candidate:
    """One evaluated kernel: the step that produced it, its budget slot and its verdict.
    ``result`` is its evaluation as the run records it: the evaluator's fields, and in
    :attr:`~jaxbench.contract.EvaluationResult.extra` the agent's keys of the event (``step``,
    ``sample``, ``method``, ``candidate_sha256``, ``parent``, ``origin``, ``truncated``,
    ``reused_from``, ``source_file``, a method's own), the same whether it was evaluated now
    or read back from the run's events."""

    step: str
    sample: int | None  # budget slot; None for seed kernels (free)
    code: str
    result: EvaluationResult
    parent: str | None = None

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def correct(self) -> bool:
        return self.status == Status.CORRECT

    @property
    def speedup(self) -> float | None:
        return self.result.speedup

    def fitness(self) -> tuple[float, float, float]:
        """Sort key, higher is better: status, then speedup, then smaller error."""
        err = self.result.max_abs_err
        return (status_rank(self.status), self.speedup or 0.0,
                -err if err is not None else float("-inf"))


def best_first(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Candidates by fitness, best first (stable, so earlier wins ties)."""
    return sorted(candidates, key=lambda c: c.fitness(), reverse=True)


class Budget:
    """The task's sample budget: candidate kernels evaluated (seeds are free)."""

    def __init__(self, total: int, stop: threading.Event | None = None) -> None:
        self.total = total
        self.used = 0
        self.stop = stop  # set when the run stops: no more slots (methods end their loops)

    @property
    def remaining(self) -> int:
        if self.stop is not None and self.stop.is_set():
            return 0
        return self.total - self.used

    def take(self, n: int) -> list[int]:
        """Reserves up to ``n`` slots (fewer when the budget runs out); returns their indices."""
        n = max(0, min(n, self.remaining))
        slots = list(range(self.used, self.used + n))
        self.used += n
        return slots


class RunStopped(Exception):
    """The run was stopped (Ctrl-C) while this sample was under way: nothing of it is kept."""


class LLMCallEvent(TypedDict, total=False):
    """A run's ``llm_call`` event as :meth:`Context.reply` writes it (and :class:`Journal`
    reads it back to resume): the call (its task, method, step and kind, its budget slot and
    sample id, the model, the documentation sections and the prompt) and how it ended: the
    answer with why the model stopped, its tokens, cost and latency; or the error
    (``status_code`` where the provider refused the request, ``cancelled`` where the stop cut
    it short)."""

    time: float  # added by RunDir.append
    type: str
    task: str
    method: str
    step: str
    kind: str  # "kernel" (the answer is a candidate) or "plan"
    sample: int | None
    sample_id: str
    model: str
    docs: list[str]
    prompt: str
    response: str
    error: str
    finish_reason: str | None
    status_code: int | None
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    cost: float | None
    latency_s: float | None
    cached: bool
    extra: dict[str, int | float | str | None]  # the provider's own figures (Completion.extra)
    cancelled: bool


class Journal:
    """Finished LLM calls and evaluations of a run, by (task, method, step), for resuming;
    and verdicts by (task, kernel hash), so a kernel proposed twice is evaluated once.
    Both hold :class:`~jaxbench.contract.EvaluationResult` objects, read back with
    :meth:`~jaxbench.contract.EvaluationResult.read` (the agent's keys in ``extra``); an
    evaluation event that is no result (no ``status``) is not kept, so a resumed run
    evaluates its step again.

    While a run goes on it also knows the model calls in flight; :meth:`close` (Ctrl-C)
    records those as cancelled and ends the run's events: what finishes after it is not
    kept (an evaluation killed by the stop is not a verdict)."""

    def __init__(self, events: Iterable[dict[str, Any]] = ()) -> None:
        self.calls: dict[tuple[str, str, str], LLMCallEvent] = {}
        self.evaluations: dict[tuple[str, str, str], EvaluationResult] = {}
        self.verdicts: dict[tuple[str, str], EvaluationResult] = {}
        self.done: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.append_lock = threading.Lock()  # one event line at a time from the thread pool
        self._kernel_locks: dict[tuple[str, str], threading.Lock] = {}
        self.closed = False
        self.in_flight: dict[str, tuple[LLMCallEvent, float]] = {}  # sample id -> (call, start)
        for event in events:
            kind = event.get("type")
            if kind == "llm_call" and event.get("cancelled"):
                continue  # cut short by a stop: a resumed run asks again
            if kind == "llm_call":
                self.calls[(event["task"], event["method"], event["step"])] = event
            elif kind == "evaluation" and "step" in event:
                try:
                    result = EvaluationResult.read(event)
                except ValueError:
                    continue
                self.evaluations[(event["task"], event["method"], event["step"])] = result
                if not result.synthetic:
                    self.verdicts[(event["task"], event["candidate_sha256"])] = result
            elif kind == "task_done":
                self.done[(event["task"], event["method"])] = event

    def kernel_lock(self, task_id: str, sha: str) -> threading.Lock:
        """Serialises evaluations of one kernel, so concurrent duplicates wait for the first."""
        with self._lock:
            return self._kernel_locks.setdefault((task_id, sha), threading.Lock())

    def append(self, run: RunDir | None, event: dict[str, Any]) -> bool:
        """Appends ``event`` to the run, unless the journal is closed (False then). A model
        call's event ends its time in flight."""
        with self.append_lock:
            if event.get("type") == "llm_call":
                self.in_flight.pop(event.get("sample_id", ""), None)
            if self.closed:
                return False
            if run is not None:
                run.append(event)
            return True

    def start_call(self, event: LLMCallEvent) -> None:
        """A model call is about to be sent (RunStopped once the journal is closed)."""
        with self.append_lock:
            if self.closed:
                raise RunStopped
            self.in_flight[event["sample_id"]] = (event, time.monotonic())

    def end_call(self, event: LLMCallEvent) -> None:
        """A model call that ended without an event of its own (it failed for good)."""
        with self.append_lock:
            self.in_flight.pop(event.get("sample_id", ""), None)

    @staticmethod
    def _cancelled(event: LLMCallEvent, started: float, why: str) -> LLMCallEvent:
        """A model call cut short by the stop: no answer, its cost unknown (providers report
        usage only with an answer); a resumed run asks again."""
        return {**event, "response": "", "error": why, "finish_reason": "cancelled",
                "cancelled": True, "input_tokens": None, "output_tokens": None, "cost": None,
                "latency_s": round(time.monotonic() - started, 3)}

    def cancel_call(self, run: RunDir | None, event: LLMCallEvent, why: str | None) -> None:
        """A model call ended by the stop: recorded as cancelled when its request had gone out
        (``why``), unless the journal is closed (then :meth:`close` recorded it)."""
        with self.append_lock:
            entry = self.in_flight.pop(event.get("sample_id", ""), None)
            if why and entry is not None and not self.closed and run is not None:
                run.append(self._cancelled(event, entry[1], why))

    def close(self, run: RunDir | None, why: str, sent: Iterable[str] | None = None) -> int:
        """Ends the run's events (Ctrl-C): each model call still in flight whose request went
        out (its sample id among ``sent``, the model client's ``in_flight``; None: every one)
        is recorded as a cancelled ``llm_call``, and nothing is appended after this. Returns
        the number of calls recorded as cancelled."""
        with self.append_lock:
            if self.closed:
                return 0
            out = None if sent is None else set(sent)
            cancelled = [(sid, entry) for sid, entry in self.in_flight.items()
                         if out is None or sid in out]
            for _, (event, started) in cancelled:
                if run is not None:
                    run.append(self._cancelled(event, started, why))
            self.in_flight.clear()
            self.closed = True
            return len(cancelled)


class Prompt(str):
    """A prompt's text, with the documentation sections it carries (recorded per call) and
    ``fixed``, the length of its fixed prefix: the characters every prompt of the task and
    method starts with (a provider that takes explicit cache breakpoints marks it)."""

    docs: tuple[str, ...] = ()
    fixed: int = 0


@dataclass
class Reply:
    """The model's answer to one prompt: its text, or why there is none."""

    text: str
    error: str | None = None
    truncated: bool = False


_STATEMENTS: dict[tuple[str, str, str, str, str | None, str], tuple[str, str]] = {}
_STATEMENTS_LOCK = threading.Lock()


def _statement(task: Task, target: str, size: str, mode: str, device_kind: str | None,
               prompt_mode: str = "default") -> tuple[str, str]:
    """(task statement, reference source), built once per task and setting."""
    key = (task.id, target, size, mode, device_kind, prompt_mode)
    with _STATEMENTS_LOCK:
        if key not in _STATEMENTS:
            _STATEMENTS[key] = (task_statement(task, target, size, mode, device_kind, prompt_mode),
                                reference_source(task))
        return _STATEMENTS[key]


@dataclass
class Context:
    """Everything a method needs for one task. Methods call :meth:`prompt`, :meth:`propose`,
    :meth:`ask`, :meth:`evaluate` and :meth:`map`; the context keeps the events and the budget."""

    task: Task
    method: str
    settings: Settings  # the evaluations' (target and mode resolved: see optimize)
    docs: bool
    model: ModelClient
    evaluator: SupportsEvaluate
    run: RunDir | None
    budget: Budget
    pool: ThreadPoolExecutor
    journal: Journal
    eval_slots: threading.Semaphore
    sampling: Sampling | None = None
    on_candidate: Callable[[Candidate], None] | None = None
    device_kind: str | None = None
    ir_feedback: bool = True
    #: "default" or "paper" (``--prompt``); None: the run's config says (``prompt``), else default
    prompt_mode: str | None = None
    candidates: list[Candidate] = field(default_factory=list)
    planning_calls: int = 0

    # the evaluations' settings by name, as methods read them
    target = property(lambda self: self.settings.target or "tpu")
    mode = property(lambda self: self.settings.mode)
    size = property(lambda self: self.settings.size)
    trials = property(lambda self: self.settings.trials)

    def rng(self, *parts: object) -> random.Random:
        """The random source of one of the method's choices, keyed by the task and ``parts``
        (so a resumed run makes the same choices), and by the run's ``--seed`` when one was
        given (so runs with other seeds make other choices)."""
        sampling = self.sampling or getattr(self.model, "sampling", None)
        seed = getattr(sampling, "seed", None)
        key = "/".join(str(p) for p in (self.task.id, *parts))
        return random.Random(key if seed is None else f"{seed}/{key}")

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        if self.prompt_mode is None:
            config = self.run.manifest.get("config") if self.run is not None else None
            self.prompt_mode = (config or {}).get("prompt") or "default"
        if self.prompt_mode not in PROMPT_MODES:
            raise ValueError(f"prompt mode {self.prompt_mode!r}: use one of {', '.join(PROMPT_MODES)}")
        self.statement, self.reference = _statement(self.task, self.target, self.size, self.mode,
                                                    self.device_kind, self.prompt_mode)
        # the same across a run's resumes (each draws a fresh secret): the answer cache's key
        self.run_id = self.run.run_id if self.run is not None else ""

    # -- prompts ---------------------------------------------------------------------------

    def prompt(self, *sections: str, answer: bool = True,
               errors: Sequence[str] | None = None) -> Prompt:
        """One prompt, its fixed part first so that providers' prompt caching applies: the
        task statement and (with ``docs``) the sections the task calls for, identical for
        every call of the task and method; then what varies per call: the method's
        ``sections``, the documentation the shown errors call for, and the answer format.

        Documentation is chosen from the task and from ``errors``, the evaluator's messages
        this prompt shows; by default those of this task's failed candidates whose message
        appears in ``sections`` (never the feedback wording around it, nor their code)."""
        body = [s.strip() for s in sections if s]
        fixed = [self.statement]
        task_docs: list[docs_pack.Section] = []
        error_docs: list[docs_pack.Section] = []
        if self.docs:
            task_docs = docs_pack.for_task(self.task, self.target, self.reference)
            fixed.append(docs_pack.render(task_docs, self.target))
            shown = self.shown_errors(body) if errors is None else list(errors)
            error_docs = docs_pack.for_errors(self.target, shown, task_docs)
        varying = list(body)
        if error_docs:
            varying.append(docs_pack.render(error_docs, self.target, docs_pack.ERROR_DOCS_TITLE))
        if answer:
            varying.append(ANSWER_FORMAT)
        head = "\n\n".join(fixed)
        prompt = Prompt("\n\n".join([head, *varying]))
        prompt.docs = tuple(s.name for s in task_docs + error_docs)
        prompt.fixed = len(head)
        return prompt

    def shown_errors(self, sections: Sequence[str]) -> list[tuple[str | None, str]]:
        """The failures that ``sections`` show, as ``(rule, message)``
        (:func:`docs_pack.shown_failures` of this task's candidates)."""
        with self._lock:
            candidates = list(self.candidates)
        return docs_pack.shown_failures(candidates, sections)

    # -- model and evaluator, with replay from the journal ----------------------------------

    def ask(self, step: str, prompt: str, sample: int | None = None, *, kind: str = "kernel") -> str:
        """The model's answer to ``prompt`` at ``step`` ("" when the call failed)."""
        return self.reply(step, prompt, sample, kind=kind).text

    def reply(self, step: str, prompt: str, sample: int | None = None, *,
              kind: str = "kernel") -> Reply:
        """The model's answer at ``step`` (replayed when the run already has it). ``kind`` is
        "kernel" for calls whose answer is a candidate, "plan" for planning calls."""
        key = (self.task.id, self.method, step)
        if key in self.journal.calls:
            past = self.journal.calls[key]
            return Reply(past.get("response") or "", past.get("error"),
                         past.get("finish_reason") == "length")
        sample_id = f"{self.task.id}/{self.method}/{step}"
        event: LLMCallEvent = {
            "type": "llm_call", "task": self.task.id, "method": self.method, "step": step,
            "kind": kind, "sample": sample, "sample_id": sample_id, "model": self.model.spec,
            "docs": list(getattr(prompt, "docs", ())), "prompt": str(prompt)}
        if kind == "plan":
            with self._lock:
                self.planning_calls += 1
        self.journal.start_call(event)
        try:
            # the Prompt itself (a str), so a provider can mark its fixed prefix for caching
            completion = self.model.complete(prompt, sample=sample_id, sampling=self.sampling,
                                             run=self.run_id)
        except LLMRequestError as exc:
            self._append({**event, "response": "", "error": str(exc), "finish_reason": "error",
                          "status_code": exc.status_code, "cost": None})
            return Reply("", str(exc))
        except LLMCancelled as exc:  # the stop: recorded as cancelled if a request went out
            self.journal.cancel_call(self.run, event, str(exc) if exc.sent else None)
            raise
        except BaseException:
            self.journal.end_call(event)  # a failure that ends the run: no event
            raise
        self._append({
            **event, "response": completion.text, "finish_reason": completion.finish_reason,
            "input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens,
            # cached_input_tokens: read from the provider's prompt cache (None: not reported);
            # cached: the whole answer came from jaxbench's own response cache
            "cached_input_tokens": completion.cached_input_tokens, "cost": completion.cost,
            "latency_s": completion.latency_s, "cached": completion.cached,
            **({"extra": completion.extra} if completion.extra else {}),
        })
        return Reply(completion.text, None, completion.truncated)

    def evaluate(self, step: str, code: str, sample: int | None, *, parent: str | None = None,
                 origin: str = "", failure: str | None = None,
                 extra: dict[str, Any] | None = None) -> Candidate:
        """Evaluates ``code`` (or records ``failure`` as a compile error without running it).
        The evaluation event is the result with the agent's keys (the step, its slot, the
        kernel's hash, its parent and origin, ``extra``), which the candidate's result also
        carries in its ``extra``."""
        key = (self.task.id, self.method, step)
        sha = source_sha256(code)
        past = self.journal.evaluations.get(key)
        result: EvaluationResult
        if past is not None and past.extra.get("candidate_sha256") == sha:
            result = past
        elif failure is not None:
            result = EvaluationResult.start(
                self.task.id, self.target, self.mode, self.size, code, versions=versions(),
            ).replace(status=Status.COMPILE_ERROR, stage=Stage.STATIC, message=failure,
                      synthetic=True)
        else:
            with self.journal.kernel_lock(self.task.id, sha):
                known = self.journal.verdicts.get((self.task.id, sha))
                if known is not None:  # the verdict again, saying whose it is
                    kept = {k: v for k, v in known.extra.items() if k != FIELD_TIME}
                    result = known.replace(extra={**kept, "reused_from": known.extra["step"]})
                else:
                    result = self._run_evaluator(code)
                    self.journal.verdicts[(self.task.id, sha)] = result.replace(
                        extra={**result.extra, "step": step})
        if result is not past:
            keys: dict[str, Any] = {
                "method": self.method, "step": step, "sample": sample, "candidate_sha256": sha,
                "parent": parent, "origin": origin, **(extra or {})}
            if self.run is not None:  # the source, content-addressed in the run directory
                keys["source_file"] = self.run.keep_source(code)
            kept = {k: v for k, v in result.extra.items() if k not in ("source", "source_file")}
            result = result.replace(task=self.task.id, extra={**kept, **keys})
            if not self._append(result.to_event()):
                raise RunStopped  # the run stopped meanwhile: a killed evaluation is no verdict
        candidate = Candidate(step, sample, code, result, parent)
        with self._lock:
            self.candidates.append(candidate)
        if self.on_candidate is not None:
            self.on_candidate(candidate)
        return candidate

    def _run_evaluator(self, code: str) -> EvaluationResult:
        """One evaluation; with ``ir_feedback``, the grids and blocks of its kernels are read
        from the jaxpr the evaluator saves (feedback for the model, never part of a verdict:
        an ``ir_facts`` key of the result's ``extra``), and the saved files are not
        recorded (no ``artifacts``: they are deleted)."""
        directory = Path(tempfile.mkdtemp(prefix="jaxbench-ir-")) if self.ir_feedback else None
        settings = self.settings.replace(save_ir=directory) if directory else self.settings
        try:
            with self.eval_slots:
                result = evaluate_with(self.evaluator, code, self.task.id, settings)
            if directory is not None:
                jaxpr = directory / "jaxpr.txt"
                facts = ir_facts(jaxpr.read_text()[:2_000_000]) if jaxpr.is_file() else None
                result = result.replace(
                    artifacts=None,
                    extra={**result.extra, **({"ir_facts": facts} if facts and facts["calls"] else {})})
        finally:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
        return result

    def _append(self, event: dict[str, Any]) -> bool:
        """Appends ``event`` to the run; False when the run has stopped (it is not kept)."""
        return self.journal.append(self.run, event)

    def propose(self, step: str, prompt: str, sample: int, *, parent: Candidate | None = None,
                origin: str = "", to_code: Callable[[str], str] = extract_code,
                extra: dict[str, Any] | None = None) -> Candidate:
        """Ask, turn the answer into code, evaluate: the usual sample."""
        reply = self.reply(step, prompt, sample)
        code, failure = self.to_code(reply, to_code)
        return self.evaluate(step, code, sample, parent=parent.step if parent else None,
                             origin=origin, failure=failure,
                             extra={**({"truncated": True} if reply.truncated else {}),
                                    **(extra or {})})

    @staticmethod
    def to_code(reply: Reply, to_code: Callable[[str], str] = extract_code) -> tuple[str, str | None]:
        """(code, failure): the kernel in a reply, or why there is none."""
        if reply.error is not None:
            return reply.text, f"the model call failed: {reply.error}"
        try:
            return to_code(reply.text), None
        except CandidateError as exc:
            return reply.text, str(exc)

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
    list their options with defaults in ``defaults`` and implement :meth:`run`.
    ``seeded`` says whether the method starts from the task's shipped seed kernels
    (recorded in the run's config and events, and flagged by the report)."""

    name = ""
    defaults: dict[str, bool | int | float | str] = {}  # option -> its default (its type too)
    seeded = False

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            known = ", ".join(sorted(self.defaults)) or "none"
            raise ValueError(f"method {self.name} has no option {unknown[0]!r} (options: {known})")
        self.options = dict(self.defaults)
        for key, value in options.items():
            self.options[key] = _coerce(value, self.defaults[key], key)
        self.check_options()

    def check_options(self) -> None:
        """Raises ValueError (one line) for option values the method cannot run with."""

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

    def summary(self, ctx: Context) -> dict[str, int | float | str]:
        """Extra fields of the task's ``task_done`` event."""
        return {}


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
