"""The seal's cost: one evaluation's wall with the tracers sealed (host profile ``full``) against
the same evaluation without the seal (host profile ``no-seal``: Landlock and namespaces as
before), side by side in one run, interleaved, on the same seeds; plus what the seal adds once
per fork server (importing everything kernels may import before the seal). Run from the repo
root::

    python benchmarks/seal_overhead.py [--rounds 3] [--tasks 8p_gemm,12p_rmsnorm,...]

Prints the median wall of each side per task, their ratio, and the ratio over all evaluations
(sum of medians); the issue's bar is at most 1.05.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

TASKS = ["8p_gemm", "12p_rmsnorm", "13p_cross_entropy", "19k_matmul_subtract_multiply_relu",
         "50k_matmul_gelu_softmax"]

PRELOAD = """
import time
from jax.experimental import pallas  # noqa: F401 - what import_harness loads before it
from jax.experimental.pallas import tpu, triton  # noqa: F401
import jaxbench.tasks
jaxbench.tasks.list_tasks()
from jaxbench.evaluator.sandbox import tracer
t0 = time.perf_counter()
tracer.preload_allowed()
print(time.perf_counter() - t0)
"""


def _evaluator(profile: str):
    from jaxbench.evaluator import Evaluator

    os.environ["JAXBENCH_HOST_PROFILE"] = profile  # read when the tracers' pool starts
    try:
        return Evaluator(spares=1)
    finally:
        os.environ.pop("JAXBENCH_HOST_PROFILE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jaxbench.tasks import get_task

    preload = [float(subprocess.run(
        [sys.executable, "-c", PRELOAD], capture_output=True, text=True, check=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}).stdout.split()[-1]) for _ in range(3)]
    tasks = args.tasks.split(",")
    walls: dict[tuple[str, str], list[float]] = {}
    sealed_seen: set[str] = set()
    with _evaluator("full") as sealed, _evaluator("no-seal") as unsealed:
        sides = {"sealed": sealed, "unsealed": unsealed}
        first = get_task(tasks[0]).kernel_files()[("seed", "tpu")]
        for ev in sides.values():  # untimed: each side's fork server and runner start
            ev.evaluate(first, tasks[0], trials=1)
        for round_ in range(args.rounds):
            for task_id in tasks:
                seed = get_task(task_id).kernel_files()[("seed", "tpu")]
                order = list(sides.items()) if round_ % 2 == 0 else list(sides.items())[::-1]
                for name, ev in order:
                    t0 = time.perf_counter()
                    result = ev.evaluate(seed, task_id, trials=1)
                    walls.setdefault((task_id, name), []).append(time.perf_counter() - t0)
                    assert result.status == "correct", (task_id, name, result.message)
                    if name == "sealed":
                        sealed_seen.add(result.sealed)
                    else:
                        assert "seccomp" not in result.sealed, result.sealed
    print(f"sealed results recorded sealed = {sorted(sealed_seen)}")
    print(f"{'task':40} {'sealed s':>9} {'unsealed s':>11} {'ratio':>7}")
    total = {"sealed": 0.0, "unsealed": 0.0}
    for task_id in tasks:
        med = {n: statistics.median(walls[(task_id, n)]) for n in ("sealed", "unsealed")}
        for n in total:
            total[n] += med[n]
        print(f"{task_id:40} {med['sealed']:9.2f} {med['unsealed']:11.2f} "
              f"{med['sealed'] / med['unsealed']:7.3f}")
    print(f"{'all (sum of medians)':40} {total['sealed']:9.2f} {total['unsealed']:11.2f} "
          f"{total['sealed'] / total['unsealed']:7.3f}")
    print(f"preload before the seal, once per fork server: median {statistics.median(preload):.2f} s "
          f"({', '.join(f'{p:.2f}' for p in preload)})")


if __name__ == "__main__":
    main()
