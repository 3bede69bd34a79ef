"""Verdicts per minute and latency through ``jaxbench serve``, beside ``jaxbench run`` on the same
kernels on the same machine: the service's own overhead as a ratio.

For each number of concurrent clients C (default 1, 4, 16, 64): fresh kernels (shipped seeds,
each made distinct by a comment, so the verdict cache never answers), ``max(8, min(2C, 64))`` of them
(``--per-level``), sent by C client threads (the package's blocking :class:`Client`, one
kernel at a time each, ``evaluate``: submit, then wait for the verdict) to one running service
with ``--workers`` workers; then the same kernels through the runner of ``jaxbench run``
(``run_jobs``, a fresh run directory) with ``min(C, workers)`` workers, so one client is
compared with one worker. Reported per level: verdicts per minute both ways, the service's
latency (submitted to verdict) p50 and p90, and the overhead ratio (service wall / run wall).
Every verdict must be ``correct`` on both sides. Run from the repo root::

    python benchmarks/serve_throughput.py [--clients 1,4,16,64] [--workers 2] [--trials 1]

Needs the serve extra (``pip install -e '.[serve]'``).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("JAXBENCH_TRITON_COMPILE", "0")

TASKS = ["12p_rmsnorm", "8p_gemm", "30k_matmul_scaling_residualadd", "41k_gemm_add_relu"]


def kernels(count: int, tag: str) -> list[tuple[str, str, str]]:
    """(task, target, source) for ``count`` distinct kernels: the seeds, cycled, tagged."""
    from jaxbench.tasks import get_task

    seeds = [(t, target, path.read_text()) for t in TASKS
             for (kind, target), path in sorted(get_task(t).kernel_files().items()) if kind == "seed"]
    return [(task, target, f"{source}\n# benchmark {tag} {i}\n")
            for i, (task, target, source) in ((i, seeds[i % len(seeds)]) for i in range(count))]


def start_server(out: Path, workers: int, trials: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "jaxbench.cli", "serve", "--port", "0", "--out",
                             str(out), "--workers", str(workers), "--mode", "interpret"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"listening on (http://\S+?)[ ,]", line)
        if found:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, found.group(1)
    raise RuntimeError("jaxbench serve did not start")


def through_service(url: str, batch: list[tuple[str, str, str]], clients: int,
                    trials: int) -> tuple[float, list[float], list[str]]:
    from jaxbench.serve import Client

    pending = list(batch)
    lock = threading.Lock()
    latencies: list[float] = []
    statuses: list[str] = []

    def client() -> None:
        with Client(url, timeout_s=600) as judge:
            while True:
                with lock:
                    if not pending:
                        return
                    task, target, source = pending.pop()
                started = time.monotonic()
                view = judge.evaluate(source, task, target=target, trials=trials, timeout_s=1200)
                with lock:
                    latencies.append(time.monotonic() - started)
                    statuses.append(view.status or view.state)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started, latencies, statuses


def through_run(batch: list[tuple[str, str, str]], workers: int, trials: int,
                directory: Path) -> tuple[float, list[str]]:
    from jaxbench.evaluator import Settings
    from jaxbench.runs import Job, RunDir, run_jobs

    jobs = []
    for i, (task, target, source) in enumerate(batch):
        path = directory / f"k{i}" / f"{task}.py"
        path.parent.mkdir(parents=True)
        path.write_text(source)
        jobs.append(Job(task, "file", target, path))
    run = RunDir.open(directory / "run", {"command": "benchmark"})
    started = time.monotonic()
    results = run_jobs(jobs, run, Settings(size="small", mode="interpret", trials=trials),
                       workers=workers)
    return time.monotonic() - started, [r.status for r in results]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="1,4,16,64", help="concurrent clients per level")
    parser.add_argument("--workers", type=int, default=2, help="the service's workers")
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--per-level", type=int, default=None,
                        help="kernels per level (default max(8, min(2 x clients, 64)))")
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    print(f"{os.cpu_count()} CPUs, interpret mode, small size, {args.trials} trial(s), service with "
          f"{args.workers} workers; seeds of {', '.join(TASKS)} (tpu and gpu), each kernel new")
    print(f"{'clients':>7} {'kernels':>7} {'serve/min':>9} {'p50 s':>6} {'p90 s':>6} "
          f"{'run workers':>11} {'run/min':>8} {'overhead':>8}")
    with tempfile.TemporaryDirectory(prefix="jaxbench-serve-bench-") as root:
        proc, url = start_server(Path(root) / "serve", args.workers, args.trials)
        try:
            warm = kernels(2, "warm-up")  # the service's tracers and runners start warm
            through_service(url, warm, 2, args.trials)
            for clients in levels:
                count = args.per_level or max(8, min(2 * clients, 64))
                batch = kernels(count, f"c{clients}")
                wall, latencies, statuses = through_service(url, batch, clients, args.trials)
                workers = min(clients, args.workers)
                run_wall, run_statuses = through_run(kernels(count, f"run-c{clients}"), workers,
                                                     args.trials, Path(root) / f"run-c{clients}")
                bad = [s for s in statuses + run_statuses if s != "correct"]
                print(f"{clients:>7} {count:>7} {60 * count / wall:>9.1f} {percentile(latencies, .5):>6.2f} "
                      f"{percentile(latencies, .9):>6.2f} {workers:>11} {60 * count / run_wall:>8.1f} "
                      f"{wall / run_wall:>7.2f}x" + (f"  NOT CORRECT: {bad}" if bad else ""), flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


if __name__ == "__main__":
    main()
