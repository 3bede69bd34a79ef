"""Default time limits that follow the task: a multiple of its seed's measured time, with a floor.

``seed_seconds.json`` beside this file holds, per task, the wall time of the
slowest shipped seed through the whole evaluator in interpret mode (small
size, 2-core CPU), written by ``python benchmarks/seed_times.py``. A candidate
may take ``FACTOR`` times that (endless loops cost a bounded share of an
agent's budget, not a flat ten minutes); device mode adds compile headroom.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("seed_seconds.json")
FACTOR = 6.0
FLOOR_S = {"interpret": 60.0, "device": 180.0}
UNMEASURED_S = {"interpret": 300.0, "device": 600.0}


@cache
def seed_seconds() -> dict[str, float]:
    try:
        table = json.loads(TABLE.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return {str(k): float(v) for k, v in table.get("seconds", {}).items()}


def default_timeout(task_id: str, mode: str) -> float:
    """Seconds one phase of an evaluation may take for this task and mode."""
    measured = seed_seconds().get(task_id)
    if measured is None:
        return UNMEASURED_S[mode]
    return max(FLOOR_S[mode], round(FACTOR * measured))
