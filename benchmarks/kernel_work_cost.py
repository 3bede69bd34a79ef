"""What counting the kernels' work as it runs costs: the counter of a baseline commit (the trace
alone, before it read wrappers, blocked operands and blocks moved) against the current one (as
the runner counts: on the trace, and again on the first trial's inputs where a kernel has an
integer operand the trace does not know, floats deciding as in interpret mode: column
``data``), side by side in one run, on the
same traced seeds; and the difference as a share of one evaluation's wall (the same seeds
evaluated once each, interpret mode). Run from the repo root (needs git, for the baseline's file)::

    python benchmarks/kernel_work_cost.py [--baseline 6764689] [--suite jaxbench] [--rounds 3]
        [--no-evaluate] [--kernel FILE:TASK[:TARGET] ...]

Prints, over all seeds, the median seconds each counter took (sum of per-seed medians), their
ratio, and the added seconds per evaluation against the evaluations' median wall; the bar is
at most 10 % added per evaluation.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COUNTER = "src/jaxbench/evaluator/judge/kernel_work.py"


def _baseline(commit: str):
    text = subprocess.run(["git", "show", f"{commit}:{COUNTER}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "kernel_work_baseline.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("kernel_work_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def _seed(task):
    files = task.kernel_files()
    path = files.get(("seed", "tpu")) or files.get(("seed", "gpu"))
    spec = importlib.util.spec_from_file_location(f"seed_{task.id}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def _median_seconds(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="6764689")
    parser.add_argument("--suite", default="jaxbench")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-evaluate", action="store_true")
    parser.add_argument("--kernel", action="append", default=[], metavar="FILE:TASK[:TARGET]",
                        help="also a kernel file on a task (target tpu unless given), traced "
                             "as the judge traces it (a library asking the device: Tokamax)")
    args = parser.parse_args()
    sys.argv[1:] = []  # (absl, which a library's kernels use, parses the command line again)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import numpy as np

    from jaxbench.evaluator.inprocess import trace_trusted
    from jaxbench.evaluator.judge import kernel_work
    from jaxbench.evaluator.judge.runner import _inputs
    from jaxbench.tasks import get_task, list_tasks

    old = _baseline(args.baseline)
    rows = []
    cases = [(task, *_seed(task)) for task in list_tasks(args.suite)]
    for given in args.kernel:
        file, task_id, target = (given.split(":") + ["tpu"])[:3]
        task = get_task(task_id)
        cases.append((task, file, trace_trusted(file, task_id, "small", target)))
    for task, path, module in cases:
        closed = module if not hasattr(module, "kernel") else \
            jax.make_jaxpr(module.kernel)(*task.input_specs("small"))
        known = None
        if kernel_work.count(closed).wants_data:  # as the runner does: again on the trial
            known = [np.asarray(x) for x in _inputs(task, [0, 1], "small")]

        def current(c=closed, k=known):
            work = kernel_work.count(c)
            # interpret mode: the trial runs on this host, so floats decide too
            return kernel_work.count(c, None, k, floats=True) if k is not None else work

        before = _median_seconds(lambda c=closed: old.count(c), args.rounds)
        after = _median_seconds(current, args.rounds)
        rows.append([task.id, path, before, after, known is not None, None])
    if not args.no_evaluate:
        from jaxbench.evaluator import Evaluator

        with Evaluator(spares=1) as ev:
            ev.evaluate(rows[0][1], rows[0][0], trials=1)  # untimed: the workers start
            for row in rows:
                t0 = time.perf_counter()
                result = ev.evaluate(row[1], row[0], trials=1)
                row[5] = time.perf_counter() - t0
                assert result.status == "correct", (row[0], result.message)
    print(f"{'task':44} {'before ms':>9} {'after ms':>9} {'data':>5} {'eval s':>7}")
    for task_id, path, before, after, ints, wall in rows:
        wall_text = f"{wall:7.2f}" if wall is not None else "      -"
        name = task_id if "/tasks/" in str(path) else f"{task_id} ({Path(path).name})"
        print(f"{name:44} {before * 1e3:9.2f} {after * 1e3:9.2f} {'yes' if ints else '':>5} "
              f"{wall_text}")
    before = sum(r[2] for r in rows)
    after = sum(r[3] for r in rows)
    print(f"counting, all seeds (sum of medians): before {before:.3f} s, after {after:.3f} s, "
          f"ratio {after / before:.2f}")
    if not args.no_evaluate:
        walls = [r[5] for r in rows]
        added = [(r[3] - r[2]) / r[5] for r in rows]
        print(f"evaluation wall: median {statistics.median(walls):.2f} s; counting's added "
              f"share per evaluation: median {statistics.median(added):+.2%}, "
              f"max {max(added):+.2%}")
    print(f"(python {sys.version.split()[0]}, jax {jax.__version__}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
