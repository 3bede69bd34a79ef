"""Measures every shipped seed through the whole evaluator and writes the per-task time table
that default time limits follow (``src/jaxbench/evaluator/parent/seed_seconds.json``).

    python benchmarks/seed_times.py                 # runs `jaxbench run --kernels seed` first
    python benchmarks/seed_times.py --from RUN_DIR  # or reads an existing run's events

Per task, the slowest seed's wall time (tracer + runner + comparison, interpret mode,
small size) is recorded with the machine it was measured on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

TABLE = Path(__file__).parents[1] / "src/jaxbench/evaluator/parent/seed_seconds.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="run_dir", default=None, help="an existing seed run")
    parser.add_argument("--out", default=str(TABLE))
    args = parser.parse_args()
    run_dir = args.run_dir
    if run_dir is None:
        run_dir = tempfile.mkdtemp(prefix="jaxbench-seed-times-")
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        subprocess.run([sys.executable, "-m", "jaxbench.cli", "run", "--kernels", "seed",
                        "--out", run_dir], check=False, env=env)
    seconds: dict[str, float] = {}
    failed = []
    for line in (Path(run_dir) / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") != "evaluation":
            continue
        if event["status"] != "correct":
            failed.append(f"{event['task']} {event['target']}: {event['status']}")
            continue
        seconds[event["task"]] = max(seconds.get(event["task"], 0.0), round(event["wall_s"], 2))
    table = {"measured_on": f"{os.cpu_count()} CPU cores, {platform.machine()}, interpret mode, "
                            "small size, trials=3, parallel workers",
             "seconds": dict(sorted(seconds.items()))}
    Path(args.out).write_text(json.dumps(table, indent=1) + "\n")
    print(f"{len(seconds)} tasks written to {args.out}")
    if failed:
        print("not correct (left out):", "; ".join(failed))


if __name__ == "__main__":
    main()
