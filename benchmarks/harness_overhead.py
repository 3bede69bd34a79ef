"""Harness overhead: `jaxbench run` on the core seeds vs the same checks done bare, in one process.

Both sides run as fresh commands (Python + JAX start-up included) on the same
kernels and do the same checks: static policy, trace, cross-lowering for the
kernel's platform, the structure rules, the memory budgets at every size, the
GPU race rule, Triton's compiler on GPU kernels (where ``triton`` is installed,
as the evaluator does), the interpret-mode correctness trials (plus the TPU
interpreter for TPU kernels), the second fill of uninitialised memory where a
kernel could read it, and the comparison with the float32 ground truth. The
difference is what the harness adds: a fresh sandboxed worker per evaluation,
JSON/array hand-off, the run directory. Run from the repo root::

    python benchmarks/harness_overhead.py [--trials 3] [--workers 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CORE_TASKS = ["1p_flash_attention", "8p_gemm", "9p_swiglu_mlp", "12p_rmsnorm", "13p_cross_entropy",
              "19k_matmul_subtract_multiply_relu", "50k_matmul_gelu_softmax"]

BARE = """
import sys
from jaxbench.evaluator.parent.compare import GroundTruth
from jaxbench.evaluator.inprocess import check_in_process
from jaxbench.tasks import get_task
truth = GroundTruth()
trials = int(sys.argv[1])
for task_id in sys.argv[2:]:
    for (kind, target), path in sorted(get_task(task_id).kernel_files().items()):
        if kind != "seed":
            continue
        out = check_in_process(path.read_text(), task_id, target=target, trials=trials, truth=truth,
                               triton=True, second_fill=True)
        assert out["ok"], out
"""


def timed(cmd: list[str]) -> float:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    started = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1, help="alternating repetitions of each side")
    args = parser.parse_args()
    tasks = ",".join(CORE_TASKS)
    bare_times, run_times = [], {w: [] for w in args.workers}
    for _ in range(args.repeat):
        bare_times.append(timed([sys.executable, "-c", BARE, str(args.trials), *CORE_TASKS]))
        for workers in args.workers:
            with tempfile.TemporaryDirectory() as out:
                run_times[workers].append(timed([
                    sys.executable, "-m", "jaxbench.cli", "run", "--kernels", "seed", "--tasks",
                    tasks, "--trials", str(args.trials), "--workers", str(workers),
                    "--out", os.path.join(out, "run")]))
    bare = min(bare_times)
    report = {"cpu_count": os.cpu_count(), "trials": args.trials, "bare_s": round(bare, 2),
              "runs": {}}
    print(f"bare checks, one process:         {bare:7.1f} s")
    for workers, times in run_times.items():
        best = min(times)
        report["runs"][workers] = {"run_s": round(best, 2), "ratio": round(best / bare, 3)}
        print(f"jaxbench run --workers {workers}:         {best:7.1f} s   ratio {best / bare:.2f}x")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
