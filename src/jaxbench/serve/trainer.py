"""Reward functions for RL trainers, judged by a ``jaxbench serve`` (completions in, rewards out).

TRL (``GRPOTrainer(reward_funcs=[reward])``): :class:`KernelReward` is called with the batch's
``completions`` (strings, or conversations whose last message holds the answer) and the
dataset's columns as keyword arguments; a ``task`` column (one task ID per row) says which
task each completion is for, else the function's own ``task``::

    reward = KernelReward("http://judge:8000", token=TOKEN, target="tpu")
    rewards = reward(completions=[answer_1, answer_2], task=["8p_gemm", "12p_rmsnorm"])

verl (``custom_reward_function.path`` = this module's file, ``name: compute_score``):
:func:`compute_score` takes ``(data_source, solution_str, ground_truth, extra_info)`` (the
ground truth, or ``extra_info["task"]``, is the task ID) and, for verl's batch reward manager,
the plural keywords (``solution_strs``, ``ground_truths``, ...) returning a list. The service
is ``JAXBENCH_SERVE_URL`` (default http://127.0.0.1:8000) with ``JAXBENCH_SERVE_TOKEN``.

All completions of a call go to the service as batches, and each answer's kernel module is
taken from its code block as the agents take it. Every completion ends one of three ways:

- **judged**: the service's verdict, and the reward its table gives it (docs/serve.md);
- **refused**: the service would not take the answer (a source over its size limit, text that
  is not UTF-8 or holds a NUL, an unknown task): ``refused_reward`` (by default what an answer
  that does not compile earns), for that completion alone, never an exception for the batch;
- **unjudged**: no verdict came (the wait ran out, the service stayed unreachable for the
  client's ``retry_s``, or it failed the evaluation): ``failure_reward``, by default ``None``,
  which TRL reads as NaN and leaves out of the group's baseline (the completion's advantage is
  0). Never scored as a failure unless asked: a slow judge must not teach the policy that a
  working kernel is junk. Each one is counted (:attr:`KernelReward.unjudged`) and warned about
  (:class:`UnjudgedWarning`).

Under TRL, each call logs the share of each outcome as metrics (``jaxbench/correct``,
``jaxbench/compile_error``, ..., ``jaxbench/unjudged``, ``jaxbench/refused``: they appear in
the trainer's logs and ``trainer.state.log_history``) and each completion's status as the
completions table's column ``jaxbench_status``. ``last_results`` keeps the submissions of the
last call (:class:`~jaxbench.serve.wire.SubmissionReply`: ``status``, ``reward``, ``result``,
...; None where nothing came back) and ``last_statuses`` their statuses.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from jaxbench.contract import STATUSES, Status, SubmissionState
from jaxbench.serve.client import DEFAULT_RETRY_S, DEFAULT_URL, TOKEN_ENV, Client, ServeClientError
from jaxbench.serve.environment import kernel_of
from jaxbench.serve.rewards import DEFAULT_STATUS_REWARDS
from jaxbench.serve.wire import BatchItem, SubmissionReply

URL_ENV = "JAXBENCH_SERVE_URL"
UNJUDGED = "unjudged"  # no verdict: the wait ran out, the service was unreachable, or it failed
REFUSED = "refused"  # the service would not take the answer (size, encoding, unknown task)
OUTCOMES = (*STATUSES, UNJUDGED, REFUSED)
# What a refused answer earns by default: what one that does not compile earns (the service's
# default table), so an answer the service cannot take never beats one that runs.
REFUSED_REWARD = DEFAULT_STATUS_REWARDS[Status.COMPILE_ERROR]
# Refusals that concern the items of a request (a source, a task), not the caller or the service.
ITEM_REFUSALS = (409, 413, 422)
# A batch request's body stays under this (the service refuses bodies over max(1 MiB, ...)).
MAX_BATCH_BYTES = 768 << 10
# What to wait for after submitting: (batch id or None, {submission id: completion index}).
Waiting = list[tuple[str | None, dict[str, int]]]


class UnjudgedWarning(RuntimeWarning):
    """Completions of a reward call got no verdict: their reward is ``failure_reward``."""


def completion_text(completion: Any) -> str:
    """The answer's text: a string, or a conversation's last message content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    if isinstance(completion, Sequence) and completion:
        return completion_text(completion[-1])
    return ""


def _local_refusal(source: str) -> str | None:
    """Why the service would refuse this source before any request (None: it may take it)."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:
        return "the source is not valid UTF-8 text"
    if "\x00" in source:
        return "the source holds a NUL character"
    return None


def _chunks(items: list[tuple[int, BatchItem]], size: int) -> list[list[tuple[int, BatchItem]]]:
    """Batches of at most ``size`` items and about MAX_BATCH_BYTES of JSON each (an item over
    that alone in its batch)."""
    out: list[list[tuple[int, BatchItem]]] = []
    current: list[tuple[int, BatchItem]] = []
    used = 0
    for entry in items:
        weight = len(json.dumps(entry[1]).encode("utf-8")) + 64
        if current and (len(current) >= size or used + weight > MAX_BATCH_BYTES):
            out.append(current)
            current, used = [], 0
        current.append(entry)
        used += weight
    if current:
        out.append(current)
    return out


class KernelReward:
    """A TRL-style reward function backed by the service.

    ``failure_reward`` is what a completion without a verdict earns: None (default) leaves it
    out of the group (TRL reads None as NaN); a number scores it as that. ``refused_reward`` is
    what an answer the service refuses earns (default -0.75, a ``compile_error``'s default).
    ``timeout_s`` bounds a call's wait for verdicts; ``retry_s`` is how long the client retries
    an unreachable or restarting service (docs/serve.md)."""

    def __init__(self, url: str | None = None, token: str | None = None, *, task: str | None = None,
                 target: str | None = None, size: str = "small", mode: str | None = None,
                 failure_reward: float | None = None, refused_reward: float | None = REFUSED_REWARD,
                 timeout_s: float = 3600.0, batch_size: int = 128,
                 retry_s: float = DEFAULT_RETRY_S) -> None:
        self.__name__ = "jaxbench_kernel_reward"  # TRL logs each reward function by its name
        self.client = Client(url or os.environ.get(URL_ENV, DEFAULT_URL),
                             token if token is not None else os.environ.get(TOKEN_ENV), retry_s=retry_s)
        self.task, self.target, self.size, self.mode = task, target, size, mode
        self.failure_reward = failure_reward
        self.refused_reward = refused_reward
        self.timeout_s = timeout_s
        self.batch_size = batch_size  # completions per batch sent (the service caps a batch)
        self.last_results: list[SubmissionReply | None] = []
        self.last_statuses: list[str] = []
        self.outcomes: Counter[str] = Counter()  # every call's outcomes, added up
        self.unjudged = 0  # completions that got no verdict, over every call
        self.refused = 0  # answers the service refused, over every call

    # -- one call ----------------------------------------------------------------------------------
    def __call__(self, completions: Sequence[Any], prompts: Sequence[Any] | None = None,
                 task: Sequence[str] | str | None = None, **kwargs: Any) -> list[float | None]:
        if not completions:
            return []
        tasks = [task] * len(completions) if isinstance(task, str) or task is None else list(task)
        results: list[SubmissionReply | None] = [None] * len(completions)
        refusals: dict[int, str] = {}
        items: list[tuple[int, BatchItem]] = []
        for index, (completion, task_id) in enumerate(zip(completions, tasks, strict=True)):
            task_id = task_id or self.task
            if not task_id:
                columns = ", ".join(sorted(k for k in kwargs if k not in _TRAINER_KWARGS)) or "none"
                raise ValueError("no task for a completion: the dataset needs a `task` column (one task ID "
                                 f"per row; other columns: {columns}) or KernelReward(task=...)")
            source = kernel_of(completion_text(completion))
            why = _local_refusal(source)
            if why is not None:
                refusals[index] = why
                continue
            item: BatchItem = {"source": source, "task": task_id, "size": self.size}
            if self.target is not None:
                item["target"] = self.target
            if self.mode is not None:
                item["mode"] = self.mode
            items.append((index, item))
        deadline = time.monotonic() + self.timeout_s
        unjudged: dict[int, str] = {}
        waiting = self._submit(items, results, refusals, unjudged)
        self._wait(waiting, results, unjudged, deadline)
        return self._finish(results, refusals, unjudged, kwargs)

    def _submit(self, items: list[tuple[int, BatchItem]], results: list[SubmissionReply | None],
                refusals: dict[int, str], unjudged: dict[int, str]) -> Waiting:
        """Sends the items as batches, every batch queued before any wait; a batch the service
        refuses for one of its items is sent again item by item, so only that item is refused.
        Returns what to wait for: (batch id or None, {submission id: completion index})."""
        waiting: Waiting = []
        for chunk in _chunks(items, self.batch_size):
            try:
                batch = self.client.submit_batch([item for _, item in chunk])
            except ServeClientError as exc:
                if exc.status in ITEM_REFUSALS:
                    waiting.append((None, self._submit_each(chunk, results, refusals, unjudged)))
                    continue
                if not _transient(exc):
                    raise  # the caller's or the service's setup (a wrong token): no reward can be right
                for index, _ in chunk:
                    unjudged[index] = exc.detail
                continue
            ids = dict(zip(batch.ids, (index for index, _ in chunk), strict=True))
            for sub in batch.submissions:
                if sub.finished_state:
                    results[ids[sub.id]] = sub
            waiting.append((batch.batch, ids))
        return waiting

    def _submit_each(self, chunk: list[tuple[int, BatchItem]], results: list[SubmissionReply | None],
                     refusals: dict[int, str], unjudged: dict[int, str]) -> dict[str, int]:
        ids: dict[str, int] = {}
        for index, item in chunk:
            fields = {k: v for k, v in item.items() if k not in ("source", "task")}
            try:
                sub = self.client.submit(item["source"], str(item.get("task")), **fields)  # type: ignore[arg-type]
            except ServeClientError as exc:
                if exc.status in ITEM_REFUSALS:
                    refusals[index] = f"HTTP {exc.status}: {exc.detail}"
                elif _transient(exc):
                    unjudged[index] = exc.detail
                else:
                    raise
                continue
            ids[sub.id] = index
            if sub.finished_state:
                results[index] = sub
        return ids

    def _wait(self, waiting: Waiting, results: list[SubmissionReply | None],
              unjudged: dict[int, str], deadline: float) -> None:
        for batch, ids in waiting:
            pending = [i for i, index in ids.items() if results[index] is None]
            if not pending:
                continue
            try:
                for sub in self.client.follow(pending if batch is None else list(ids),
                                              max(0.0, deadline - time.monotonic()), batch=batch):
                    if sub.id in ids:
                        results[ids[sub.id]] = sub
            except ServeClientError as exc:
                if not _transient(exc):
                    raise
                for sub_id in pending:
                    if results[ids[sub_id]] is None:
                        unjudged[ids[sub_id]] = exc.detail
            for sub_id in pending:
                index = ids[sub_id]
                if results[index] is None and index not in unjudged:
                    unjudged[index] = f"no verdict within timeout_s={self.timeout_s:g} s"

    def _finish(self, results: list[SubmissionReply | None], refusals: dict[int, str],
                unjudged: dict[int, str], kwargs: dict[str, Any]) -> list[float | None]:
        rewards: list[float | None] = []
        statuses: list[str] = []
        for index, sub in enumerate(results):
            value = sub.reward_value if sub is not None else None
            if index in refusals:
                statuses.append(REFUSED)
                rewards.append(self.refused_reward)
            elif (sub is None or sub.state != SubmissionState.DONE or isinstance(value, bool)
                  or not isinstance(value, (int, float))):
                if sub is not None and index not in unjudged:
                    unjudged[index] = sub.error or f"state {sub.state}"
                statuses.append(UNJUDGED)
                rewards.append(self.failure_reward)
            else:
                statuses.append(str(sub.status or (sub.result.status if sub.result else "")))
                rewards.append(float(value))
        self.last_results, self.last_statuses = results, statuses
        counts = Counter(statuses)
        self.outcomes.update(counts)
        self.unjudged += counts[UNJUDGED]
        self.refused += counts[REFUSED]
        if counts[UNJUDGED]:
            reasons = "; ".join(sorted(set(unjudged.values())))[:500]
            warnings.warn(f"jaxbench KernelReward: {counts[UNJUDGED]} of {len(results)} completions got no "
                          f"verdict ({reasons}); their reward is failure_reward={self.failure_reward!r}"
                          + (" (left out of the group's baseline)" if self.failure_reward is None else ""),
                          UnjudgedWarning, stacklevel=3)
        if refusals:
            reasons = "; ".join(sorted(set(refusals.values())))[:500]
            warnings.warn(f"jaxbench KernelReward: the service refused {len(refusals)} of {len(results)} "
                          f"answers ({reasons}); each earns refused_reward={self.refused_reward!r}",
                          UserWarning, stacklevel=3)
        self._log(statuses, kwargs)
        return rewards

    @staticmethod
    def _log(statuses: list[str], kwargs: dict[str, Any]) -> None:
        """The outcomes through TRL's reward-function hooks, where the trainer passes them:
        ``log_metric`` (a scalar per name, averaged over the logging step: every outcome's
        share, so the averages are over every call) and ``log_extra`` (a completions-table
        column)."""
        log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
        log_extra: Callable[[str, list[Any]], None] | None = kwargs.get("log_extra")
        if callable(log_metric):
            counts = Counter(statuses)
            for outcome in OUTCOMES:
                log_metric(f"jaxbench/{outcome}", counts[outcome] / len(statuses))
        if callable(log_extra):
            log_extra("jaxbench_status", list(statuses))

    def close(self) -> None:
        self.client.close()


# What a trainer passes a reward function besides the dataset's columns (TRL 1.x).
_TRAINER_KWARGS = frozenset({"completion_ids", "trainer_state", "log_extra", "log_metric", "environments"})


def _transient(exc: ServeClientError) -> bool:
    """The service could not be reached, or stayed busy, for the whole retry budget."""
    return exc.status == 0 or exc.status in (429, 500, 502, 503, 504)


_verl: KernelReward | None = None


def _verl_reward() -> KernelReward:
    """verl adds scores into a tensor: no score can be left out, so a completion without a
    verdict scores ``JAXBENCH_VERL_FAILURE_REWARD`` (default 0), counted and warned about."""
    global _verl
    if _verl is None:
        _verl = KernelReward(failure_reward=float(os.environ.get("JAXBENCH_VERL_FAILURE_REWARD", "0")))
    return _verl


def _task_of(ground_truth: Any, extra_info: Any) -> str:
    if isinstance(extra_info, dict) and isinstance(extra_info.get("task"), str):
        return extra_info["task"]
    if isinstance(ground_truth, dict) and isinstance(ground_truth.get("task"), str):
        return ground_truth["task"]
    return str(ground_truth)


def _score(value: float | None) -> float:
    return 0.0 if value is None else value


def compute_score(data_source: Any = None, solution_str: str | None = None, ground_truth: Any = None,
                  extra_info: Any = None, **kwargs: Any) -> float | list[float]:
    """verl's reward hook: one score, or (``solution_strs=`` ..., the batch manager's call) a
    list of scores."""
    reward = _verl_reward()
    if "solution_strs" in kwargs:
        solutions = list(kwargs["solution_strs"])
        truths = list(kwargs.get("ground_truths") or [None] * len(solutions))
        extras = list(kwargs.get("extra_infos") or [None] * len(solutions))
        scores = reward(solutions, task=[_task_of(g, e) for g, e in zip(truths, extras, strict=True)])
        return [_score(s) for s in scores]
    return _score(reward([solution_str or ""], task=[_task_of(ground_truth, extra_info)])[0])


__all__ = ["OUTCOMES", "REFUSED", "REFUSED_REWARD", "UNJUDGED", "URL_ENV", "KernelReward", "UnjudgedWarning",
           "completion_text", "compute_score"]
