"""Two versions of the evaluator side by side: `jaxbench run` of the same seeds with this
checkout's code and with another checkout's (e.g. the commit before a change to the trust
boundary), alternating, each a fresh command on the same machine, with the time per phase.

    git worktree add /tmp/before <commit>
    python benchmarks/boundary_versions.py /tmp/before [--repeat 2] [--tasks 8p_gemm,...]

Prints, per version, the wall time of each `jaxbench run` (best of the repeats), the sum over
the evaluations of each phase the results record (`stages.<name>.seconds`; the phases differ
between versions), the evaluations' statuses, and the ratio of the wall times.

With ``--eval TASK`` each version runs one lone `jaxbench eval --task TASK --json` of the
task's TPU seed instead (the command's start and the first tracer's included): the phases are
that result's spans, and its own wall is printed beside the command's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

CORE_TASKS = ["1p_flash_attention", "8p_gemm", "9p_swiglu_mlp", "12p_rmsnorm", "13p_cross_entropy",
              "19k_matmul_subtract_multiply_relu", "50k_matmul_gelu_softmax"]
HERE = Path(__file__).resolve().parents[1]


def run_once(src: Path, tasks: list[str], out: Path) -> tuple[float, dict[str, float], Counter]:
    """One `jaxbench run` with ``src`` first on the import path; (wall s, phase sums, statuses)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(src)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "jaxbench.cli", "run", "--tasks", ",".join(tasks),
                    "--kernels", "seed", "--out", str(out)], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    phases: dict[str, float] = defaultdict(float)
    statuses: Counter = Counter()
    for line in (out / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") != "evaluation":
            continue
        statuses[event["status"]] += 1
        for name, info in (event.get("stages") or {}).items():
            if isinstance(info, dict) and isinstance(info.get("seconds"), (int, float)):
                phases[name] += info["seconds"]
    return wall, dict(phases), statuses


def eval_once(src: Path, task: str, out: Path) -> tuple[float, dict[str, float], Counter]:
    """One lone `jaxbench eval` of ``task``'s TPU seed with ``src`` first on the import path;
    (wall s, the result's spans with its own wall as ``result_wall``, its status)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(src)}
    seed = HERE / "src" / "jaxbench" / "tasks" / "jaxbench" / task / "seed_tpu.py"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "jaxbench.cli", "eval", "--task", task,
                           "--json", str(seed)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, {**result.get("spans", {}), "result_wall": result["wall_s"]}, \
        Counter([result["status"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="the other checkout (its src/ is used)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--tasks", default=",".join(CORE_TASKS))
    parser.add_argument("--eval", metavar="TASK", default=None,
                        help="one lone `jaxbench eval` of TASK's seed per version instead")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    versions = {"before": args.before.resolve() / "src", "this": HERE / "src"}
    walls: dict[str, list[float]] = defaultdict(list)
    phases: dict[str, dict[str, float]] = {}
    statuses: dict[str, Counter] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for name, src in versions.items():  # alternating, so drift hits both alike
                out = Path(tmp) / f"{name}-{i}"
                wall, found, counted = (eval_once(src, args.eval, out) if args.eval
                                        else run_once(src, tasks, out))
                walls[name].append(wall)
                if wall == min(walls[name]):
                    phases[name], statuses[name] = found, counted
    for name in versions:
        print(f"{name}: wall {min(walls[name]):.1f} s best of {args.repeat} "
              f"(median {statistics.median(walls[name]):.1f} s); statuses {dict(statuses[name])}")
        print("  phases (s, summed over evaluations): " + ", ".join(
            f"{k} {v:.1f}" for k, v in sorted(phases[name].items())))
    print(f"this / before, wall: {min(walls['this']) / min(walls['before']):.2f}")


if __name__ == "__main__":
    main()
