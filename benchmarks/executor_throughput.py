"""Evaluations per minute on this machine: the local executor vs the Ray executor, in one run.

Both evaluate the same seed kernels (interpret mode, small size) into fresh run directories
with the same parallelism: ``--workers`` local worker slots, and a new local Ray cluster of
``--workers`` CPUs (one CPU per evaluation). Each side's time runs from the first job to the
last verdict and includes starting its evaluators (tracers, trusted runners; on Ray also the
Ray worker processes); the Ray cluster's own start-up is reported apart. Both sides must give
the same statuses. Run from the repo root::

    python benchmarks/executor_throughput.py [--workers 2] [--trials 1]

Needs the ray extra (``pip install -e '.[ray]'``).
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("JAXBENCH_TRITON_COMPILE", "0")

TASKS = ["8p_gemm", "12p_rmsnorm", "30k_matmul_scaling_residualadd"]  # x {gpu, tpu} seeds: 6


def timed_run(jobs, executor: str, workers: int, trials: int) -> tuple[float, dict[str, str]]:
    from jaxbench.evaluator import Settings
    from jaxbench.runs import RunDir
    from jaxbench.runs.jobs import run_jobs

    with tempfile.TemporaryDirectory(prefix=f"jaxbench-bench-{executor}-") as directory:
        run = RunDir.open(Path(directory) / "run", {"command": "benchmark", "executor": executor})
        started = time.monotonic()
        results = run_jobs(jobs, run, Settings(size="small", mode="interpret", trials=trials),
                           workers=workers, executor=executor)
        seconds = time.monotonic() - started
    return seconds, {r.extra["job"]: r.status for r in results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="evaluations at once, both sides")
    parser.add_argument("--trials", type=int, default=1)
    args = parser.parse_args()

    import warnings

    import ray

    # ray.init starts the cluster's processes after JAX's threads exist (they exec at once)
    warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)

    from jaxbench.runs.jobs import shipped_jobs
    from jaxbench.tasks import get_task

    jobs = shipped_jobs([get_task(t) for t in TASKS], "seed", ("gpu", "tpu"))
    print(f"{len(jobs)} seed kernels, interpret mode, small size, {args.trials} trial(s), "
          f"{args.workers} at once; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the start")

    local_s, local_status = timed_run(jobs, "local", args.workers, args.trials)
    started = time.monotonic()
    ray.init(address="local", num_cpus=args.workers, logging_level=logging.WARNING,
             log_to_driver=False)
    ray_start_s = time.monotonic() - started
    try:
        ray_s, ray_status = timed_run(jobs, "ray", 0, args.trials)  # 0: the cluster's slots
    finally:
        ray.shutdown()
    if ray_status != local_status:
        raise SystemExit(f"the executors disagree: local {local_status} vs ray {ray_status}")

    local_rate, ray_rate = 60 * len(jobs) / local_s, 60 * len(jobs) / ray_s
    print(f"local: {len(jobs)} evaluations in {local_s:.1f} s = {local_rate:.1f} per minute")
    print(f"ray:   {len(jobs)} evaluations in {ray_s:.1f} s = {ray_rate:.1f} per minute "
          f"(+ {ray_start_s:.1f} s to start the local Ray cluster, not counted)")
    print(f"ray / local: {ray_rate / local_rate:.2f}x evaluations per minute; same statuses "
          f"({sorted(set(local_status.values()))}); load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
