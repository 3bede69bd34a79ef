"""CPU a fresh Python process spends importing what an evaluation's processes import.

One evaluation starts three Python processes (the command or the caller's process, the
tracers' fork server and the trusted runner), and the test suite starts hundreds, so what an
import costs is paid many times. Each figure is the median CPU time (user + system, read
from ``wait4``) of ``--repeats`` fresh processes running one import line, per interpreter
given with ``--python``: give two environments (say, one with ml_dtypes 0.6 and one with
0.7) to compare them side by side in one run.

    python benchmarks/process_start.py
    python benchmarks/process_start.py --python .venv/bin/python /tmp/other/bin/python

Prints one JSON line per interpreter and line, and a table with each line's ratio to the
first interpreter's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

LINES = {
    "python": "pass",
    "numpy": "import numpy",
    "numpy + ml_dtypes": "import numpy, ml_dtypes",
    "jax": "import jax",
    "tracer harness": ("from jaxbench.evaluator.sandbox.tracer import import_harness; "
                       "import_harness()"),
}


def cpu_seconds(python: str, line: str) -> float:
    """CPU time of one fresh process running ``line``."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.Popen([python, "-c", line], env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"error: {python} -c {line!r} exited with {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


def versions(python: str) -> str:
    probe = ("import importlib.metadata as m; print(' '.join(f'{p} {m.version(p)}' for p in "
             "('jax', 'numpy', 'ml_dtypes')))")
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    return out.stdout.strip() or out.stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", nargs="+", default=[sys.executable],
                        help="interpreters to compare (default: this one)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for python in args.python:
        print(f"# {python}: {versions(python)}", flush=True)
    table: dict[str, dict[str, float]] = {}
    for name, line in LINES.items():
        samples: dict[str, list[float]] = {python: [] for python in args.python}
        for _ in range(args.repeats):  # interpreters take turns: a busier moment hits all alike
            for python in args.python:
                samples[python].append(cpu_seconds(python, line))
        for python in args.python:
            table.setdefault(name, {})[python] = median = statistics.median(samples[python])
            print(json.dumps({"python": python, "line": name, "cpu_s": round(median, 3)}),
                  flush=True)
    first = args.python[0]
    print(f"\n{'line':<20}" + "".join(f"{p[-28:]:>30}" for p in args.python))
    for name, row in table.items():
        cells = [f"{row[p]:.2f} s" + (f" ({row[p] / row[first]:.2f}x)" if p != first else "")
                 for p in args.python]
        print(f"{name:<20}" + "".join(f"{c:>30}" for c in cells))


if __name__ == "__main__":
    main()
