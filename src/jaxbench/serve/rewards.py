"""From a verdict to a reward: a small table users can change (``jaxbench serve --rewards FILE``).

The rules the table cannot break:

- only ``correct`` earns the correctness reward; ``unverified`` (nothing trusted could run the
  kernel), ``rejected`` (gaming the check, escaping the sandbox) and every other status get
  their own entry of :attr:`RewardTable.statuses`, never the correctness reward;
- a debug run (``jax.debug.print``, judged on the untrusted side) earns nothing;
- a kernel refused only for the work it leaves in XLA (a policy rule code) earns what
  ``no_pallas`` earns, never ``rejected``'s: its status is ``no_pallas``, and a record of a run
  written before (``rejected`` with such a code) is read the same;
- a speedup counts only in device mode, only for a ``correct`` verdict, and only when it is a
  finite positive number: interpret mode measures no time, so its reward is for correctness
  alone, and every reward computed in interpret mode says so in its ``note``.

By default the other statuses are ordered by how far the answer got (``compile_error`` <
``no_pallas`` < ``runtime_error``/``timeout`` < ``incorrect``), with ``rejected`` below them
all and ``crashed`` (the harness's failure) with ``unverified``: see :data:`DEFAULT_STATUS_REWARDS`.

The reward of a correct device-mode verdict is ``correct + speedup_weight *
clamp(log2(speedup), speedup_floor, speedup_cap)``: 1.0 at parity with XLA, 2.0 at 2x, 0.0 at
half XLA's speed (by default).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from jaxbench.contract import POLICY_RULES, POLICY_STATUS, STATUSES, EvaluationResult, Status

INTERPRET_NOTE = ("interpret mode: no timing is measured, so the reward is for correctness only "
                  "(no speedup term)")
# STATUSES (the schema's) are the statuses an evaluation can end with (docs/design.md); a status
# the table does not know gets the `unknown` entry.
UNKNOWN = "unknown"

# The default rewards climb with how far an answer got, so that no answer earns more than one
# that got further (docs/serve.md, "Rewards"): an answer that does not parse, trace or compile
# (junk included) earns less than one that runs without being a kernel (plain JAX), which earns
# less than a Pallas kernel that runs and fails, which earns less than one that runs to the end
# with wrong numbers. Were junk above plain JAX, a policy would lower its penalty by emitting
# garbage. Cheating is below everything.
DEFAULT_STATUS_REWARDS: dict[str, float] = {
    Status.INCORRECT: 0.0,  # a kernel that runs to the end, with wrong numbers
    Status.UNVERIFIED: 0.0,  # nothing trusted ran it: never the correctness reward
    Status.RUNTIME_ERROR: -0.25,  # a Pallas kernel that traced, lowered and then failed to run
    Status.TIMEOUT: -0.25,
    Status.CRASHED: 0.0,  # the harness failed, not the answer: never below an honest failure
    Status.NO_PALLAS: -0.5,  # plain JAX, or too much of the work in XLA: runs, but not (enough of) a kernel
    Status.COMPILE_ERROR: -0.75,  # does not parse, import, trace or lower: junk lands here
    Status.REJECTED: -1.0,  # gaming the check or escaping the sandbox
    UNKNOWN: 0.0,
}


@dataclass(frozen=True)
class RewardTable:
    """Status and speedup to reward. ``statuses`` holds the reward of each status other than
    ``correct`` (missing ones get ``unknown``'s); ``correct`` is the correctness reward."""

    correct: float = 1.0
    statuses: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_STATUS_REWARDS))
    speedup_weight: float = 1.0
    speedup_floor: float = -1.0
    speedup_cap: float = 3.0

    def __post_init__(self) -> None:
        if Status.CORRECT in self.statuses:
            raise ValueError("the reward table's statuses hold the other statuses; `correct` is "
                             "its own entry (correct)")
        for name, value in {Status.CORRECT: self.correct, **self.statuses,
                            "speedup_weight": self.speedup_weight}.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ValueError(f"reward table: {name} must be a finite number, not {value!r}")
        if self.speedup_floor > self.speedup_cap:
            raise ValueError("reward table: speedup_floor is above speedup_cap")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardTable:
        """A table from JSON-like data: ``{"correct": 1, "statuses": {"rejected": -2}, ...}``;
        statuses not named keep their default."""
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"reward table: unknown keys {sorted(unknown)}")
        statuses = dict(DEFAULT_STATUS_REWARDS)
        statuses.update(data.get("statuses") or {})
        base = cls()
        return replace(base, statuses=statuses,
                       **{f.name: data[f.name] for f in fields(cls)
                          if f.name != "statuses" and f.name in data})

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> RewardTable:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def as_dict(self) -> dict[str, float | dict[str, float]]:
        return {f.name: dict(self.statuses) if f.name == "statuses" else getattr(self, f.name)
                for f in fields(self)}


DEFAULT_TABLE = RewardTable()


class Reward(TypedDict):
    """One verdict's reward (:func:`reward`)."""

    value: float
    correctness: float
    speedup_term: float
    basis: str  # correctness, or correctness+speedup
    note: NotRequired[str]  # interpret mode: only correctness is rewarded


class RewardNote(TypedDict):
    """The reward shown for an interpret-mode submission without a verdict yet: none so far,
    and only correctness will count."""

    value: None
    note: str


def pending_interpret() -> RewardNote:
    """What an interpret-mode submission shows for its reward before its verdict."""
    return {"value": None, "note": INTERPRET_NOTE}


def _speedup(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def reward(result: EvaluationResult | Mapping[str, Any], table: RewardTable = DEFAULT_TABLE) -> Reward:
    """The reward of one evaluation result (an :class:`~jaxbench.contract.EvaluationResult`,
    or a record of one as a run's events hold it): ``value`` (what a trainer adds up),
    ``correctness`` and ``speedup_term`` (its two parts), ``basis`` (``correctness`` or
    ``correctness+speedup``) and, in interpret mode, ``note`` saying that only correctness
    is rewarded."""
    status: object
    rule: object
    mode: object
    if isinstance(result, EvaluationResult):
        status, rule, mode = result.status, result.rule, result.mode
        debug, speedup = result.debug, _speedup(result.speedup)
    else:  # a record read from JSON: any of its values may be of any type
        status, rule, mode = result.get("status"), result.get("rule"), result.get("mode")
        debug, speedup = bool(result.get("debug")), _speedup(result.get("speedup"))
    if status == Status.REJECTED and rule in POLICY_RULES:
        status = POLICY_STATUS  # an older run's policy refusal: no cheat, as runs say now
    is_correct = status == Status.CORRECT and not debug
    if is_correct:
        correctness = table.correct
    else:
        key = status if isinstance(status, str) and status in table.statuses else UNKNOWN
        correctness = table.statuses.get(key, 0.0)
    speedup_term = 0.0
    basis = "correctness"
    if is_correct and mode == "device" and speedup is not None:
        speedup_term = table.speedup_weight * min(table.speedup_cap,
                                                  max(table.speedup_floor, math.log2(speedup)))
        basis = "correctness+speedup"
    out: Reward = {"value": correctness + speedup_term, "correctness": correctness,
                   "speedup_term": speedup_term, "basis": basis}
    if mode != "device":
        out["note"] = INTERPRET_NOTE
    return out


__all__ = ["DEFAULT_STATUS_REWARDS", "DEFAULT_TABLE", "INTERPRET_NOTE", "STATUSES", "Reward",
           "RewardNote", "RewardTable", "pending_interpret", "reward"]
