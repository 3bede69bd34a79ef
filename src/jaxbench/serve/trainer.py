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

All completions of a call go to the service as one batch, and each answer's kernel module is
taken from its code block as the agents take it. A completion that got no verdict (the service
failed it, or the wait ran out) earns ``failure_reward``. The reward table is the service's
(docs/serve.md); ``last_results`` keeps the submissions of the last call for logging
(:class:`~jaxbench.serve.wire.SubmissionReply`: ``status``, ``reward``, ``result``, ...).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from jaxbench.contract import SubmissionState
from jaxbench.serve.client import DEFAULT_URL, TOKEN_ENV, Client
from jaxbench.serve.environment import kernel_of
from jaxbench.serve.wire import BatchItem, SubmissionReply

URL_ENV = "JAXBENCH_SERVE_URL"


def completion_text(completion: Any) -> str:
    """The answer's text: a string, or a conversation's last message content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    if isinstance(completion, Sequence) and completion:
        return completion_text(completion[-1])
    return ""


class KernelReward:
    """A TRL-style reward function backed by the service."""

    def __init__(self, url: str | None = None, token: str | None = None, *, task: str | None = None,
                 target: str | None = None, size: str = "small", mode: str | None = None,
                 failure_reward: float = 0.0, timeout_s: float = 3600.0, batch_size: int = 128) -> None:
        self.__name__ = "jaxbench_kernel_reward"  # TRL logs each reward function by its name
        self.client = Client(url or os.environ.get(URL_ENV, DEFAULT_URL),
                             token if token is not None else os.environ.get(TOKEN_ENV))
        self.task, self.target, self.size, self.mode = task, target, size, mode
        self.failure_reward = failure_reward
        self.timeout_s = timeout_s
        self.batch_size = batch_size  # completions per batch sent (the service caps a batch)
        self.last_results: list[SubmissionReply] = []

    def __call__(self, completions: Sequence[Any], prompts: Sequence[Any] | None = None,
                 task: Sequence[str] | str | None = None, **kwargs: Any) -> list[float]:
        if not completions:
            return []
        tasks = [task] * len(completions) if isinstance(task, str) or task is None else list(task)
        items: list[BatchItem] = []
        for completion, task_id in zip(completions, tasks, strict=True):
            task_id = task_id or self.task
            if not task_id:
                raise ValueError("no task for a completion: pass a `task` column or KernelReward(task=...)")
            item: BatchItem = {"source": kernel_of(completion_text(completion)), "task": task_id,
                               "size": self.size}
            if self.target is not None:
                item["target"] = self.target
            if self.mode is not None:
                item["mode"] = self.mode
            items.append(item)
        submitted = [self.client.submit_batch(items[start:start + self.batch_size])
                     for start in range(0, len(items), self.batch_size)]  # all queued at once
        views = [view for batch in submitted for view in self.client.wait_batch(batch, self.timeout_s)]
        self.last_results = views
        return [self._value(view) for view in views]

    def _value(self, sub: SubmissionReply) -> float:
        value = sub.reward_value
        if sub.state != SubmissionState.DONE or not isinstance(value, (int, float)):
            return self.failure_reward
        return float(value)

    def close(self) -> None:
        self.client.close()


_verl: KernelReward | None = None


def _verl_reward() -> KernelReward:
    global _verl
    if _verl is None:
        _verl = KernelReward()
    return _verl


def _task_of(ground_truth: Any, extra_info: Any) -> str:
    if isinstance(extra_info, dict) and isinstance(extra_info.get("task"), str):
        return extra_info["task"]
    if isinstance(ground_truth, dict) and isinstance(ground_truth.get("task"), str):
        return ground_truth["task"]
    return str(ground_truth)


def compute_score(data_source: Any = None, solution_str: str | None = None, ground_truth: Any = None,
                  extra_info: Any = None, **kwargs: Any) -> float | list[float]:
    """verl's reward hook: one score, or (``solution_strs=`` ..., the batch manager's call) a
    list of scores."""
    reward = _verl_reward()
    if "solution_strs" in kwargs:
        solutions = list(kwargs["solution_strs"])
        truths = list(kwargs.get("ground_truths") or [None] * len(solutions))
        extras = list(kwargs.get("extra_infos") or [None] * len(solutions))
        return reward(solutions, task=[_task_of(g, e) for g, e in zip(truths, extras, strict=True)])
    return reward([solution_str or ""], task=[_task_of(ground_truth, extra_info)])[0]


__all__ = ["URL_ENV", "KernelReward", "completion_text", "compute_score"]
