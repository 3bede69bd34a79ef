"""What an evaluation will cost on this host in interpret mode, before it starts.

Interpret mode runs a kernel's grid as XLA loops on the CPU (and the TPU interpreter, far
slower, on top), so its cost grows with the task's work: at the catalogue's ``full`` sizes
that is hundreds to thousands of times the ``small`` size. The estimate scales the measured
time of the task's slowest seed at ``small`` size (``seed_seconds.json``; start-up excluded)
by the ratio of work (the larger of the FLOP and byte ratios) and the number of runs, and
counts host memory for the float32 truths, the runner's and the tracer's copies. It is rough
by design: it serves to refuse evaluations that cannot finish within their time limit or in
this host's memory, not to predict run times.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from jaxbench.evaluator.parent.timeouts import seed_seconds

STARTUP_S = 4.0  # tracer and runner start-up, tracing, lowering: not proportional to work
UNMEASURED_S = 10.0  # a task without a measured seed time
MEASURED_RUNS = 4  # seed_seconds.json: trials=3 plus the TPU-interpreter run
# Host bytes per byte of the task's inputs and outputs (bf16 mostly): float32 truths and
# upcast inputs in the parent, inputs and outputs in the runner and in the tracer's
# interpreter runs.
HOST_BYTES_FACTOR = 6.0


@dataclass
class Cost:
    seconds: float
    host_bytes: float
    work_ratio: float
    flops: float
    task_bytes: float


def estimate(task: Any, size: str, trials: int) -> Cost:
    """Estimated wall time and host memory of one interpret-mode evaluation of ``task``."""
    measured = seed_seconds().get(task.id, UNMEASURED_S)
    flops, task_bytes = float(task.flops(size)), float(task.bytes(size))
    ratio = max(task_bytes / max(float(task.bytes("small")), 1.0),
                flops / max(float(task.flops("small")), 1.0), 1.0)
    per_work = max(measured - STARTUP_S, 0.1 * measured)
    runs = (trials + 1) / MEASURED_RUNS
    seconds = STARTUP_S + per_work * ratio * runs
    host = task_bytes * HOST_BYTES_FACTOR * max(1.0, (trials + 1) / 2)
    return Cost(seconds, host, ratio, flops, task_bytes)


def physical_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"


def interpret_cost_problem(task: Any, size: str, trials: int, timeout_s: float) -> str | None:
    """Why an interpret-mode evaluation at ``size`` cannot finish (over its time limit or this
    host's memory), or None. The caller decides whether to refuse (``--force`` overrides)."""
    cost = estimate(task, size, trials)
    memory = physical_memory_bytes()
    over_time = cost.seconds > timeout_s
    over_memory = memory is not None and cost.host_bytes > 0.8 * memory
    if not (over_time or over_memory):
        return None
    reasons = []
    if over_time:
        reasons.append(f"an estimated {_duration(cost.seconds)}, over its {timeout_s:g} s limit")
    if over_memory:
        reasons.append(f"about {cost.host_bytes / 2**30:.0f} GiB of host memory, over the "
                       f"{memory / 2**30:.0f} GiB here")  # type: ignore[operator]
    return (f"{task.id} at size {size} in interpret mode ({cost.flops / 1e9:,.0f} GFLOP, "
            f"{cost.task_bytes / 2**30:.2f} GiB of inputs and outputs: {cost.work_ratio:,.0f}x "
            f"the small size) needs {' and '.join(reasons)}")


__all__ = ["Cost", "estimate", "interpret_cost_problem"]
