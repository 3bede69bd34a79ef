"""Evaluates every GPU seed at full size on an NVIDIA GPU (device mode) and prints/saves a table.

    python scripts/gpu_check.py [--out gpu_check.json] [--tasks ID,ID] [--kinds seed,expert]
                                [--cheats FILE:TASK,...]

``--cheats`` also runs the named adversarial kernels in the same mode (each must not be
judged ``correct``); their rows are marked ``cheat``.

On a machine without a GPU it stops with a one-line error; `--dry-run` runs
the same pipeline in interpret mode at small size instead (to test the script).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from jaxbench.backends import accelerator_platform, device_kind
from jaxbench.evaluator import Evaluator
from jaxbench.tasks import get_task, list_tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="gpu_check.json")
    parser.add_argument("--tasks", default=None, help="comma-separated task IDs (default: all)")
    parser.add_argument("--kinds", default="seed", help="seed, expert or both (comma-separated)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per evaluation, seconds")
    parser.add_argument("--dry-run", action="store_true", help="interpret mode, small size (no GPU)")
    parser.add_argument("--cheats", default="", help="FILE:TASK pairs, comma-separated")
    args = parser.parse_args()
    if not args.dry_run and accelerator_platform() != "gpu":
        sys.exit("gpu_check: error: no NVIDIA GPU is visible to JAX; use --dry-run to test the script")
    mode, size = ("interpret", "small") if args.dry_run else ("device", "full")
    tasks = [get_task(t) for t in args.tasks.split(",")] if args.tasks else list_tasks()
    kinds = args.kinds.split(",")
    rows = []
    with Evaluator(spares=1) as evaluator:
        for task in tasks:
            for (kind, target), path in sorted(task.kernel_files().items()):
                if target != "gpu" or kind.split("_")[0] not in kinds:
                    continue
                started = time.monotonic()
                r = evaluator.evaluate(path, task.id, target="gpu", mode=mode, size=size,
                                       timeout_s=args.timeout)
                rows.append(_record(r, kind, started))
                print(_row(rows[-1]), flush=True)
        for pair in filter(None, args.cheats.split(",")):
            path, task_id = pair.rsplit(":", 1)
            started = time.monotonic()
            r = evaluator.evaluate(path, task_id, mode=mode, size=size, timeout_s=args.timeout)
            rows.append(_record(r, "cheat", started) | {"file": path})
            print(_row(rows[-1]), flush=True)
    from jaxbench.evaluator.result import versions

    report = {"device_kind": device_kind(), "mode": mode, "size": size, "versions": versions(),
              "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "results": rows}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, default=str)
    kernels = [r for r in rows if r["kernel"] != "cheat"]
    ok = sum(r["status"] == "correct" for r in kernels)
    caught = sum(r["status"] != "correct" for r in rows if r["kernel"] == "cheat")
    print(f"{ok}/{len(kernels)} correct, {caught}/{len(rows) - len(kernels)} cheats caught on "
          f"{report['device_kind']}; written to {args.out}")


def _record(r: dict, kind: str, started: float) -> dict:
    return {k: r.get(k) for k in (
        "task", "status", "stage", "message", "t_ref_ms", "t_kernel_ms", "speedup", "max_abs_err",
        "compile_s", "device_kind", "judged_on", "isolation", "timing_method")} | {
        "kernel": kind, "wall_s": round(time.monotonic() - started, 2),
        "t_ref_iqr_ms": r.get("stages", {}).get("time", {}).get("t_ref_iqr_ms"),
        "t_kernel_iqr_ms": r.get("stages", {}).get("time", {}).get("t_kernel_iqr_ms")}


def _row(r: dict) -> str:
    def ms(x: float | None) -> str:
        return f"{x:9.3f}" if x is not None else "        -"

    speed = f"{r['speedup']:6.2f}x" if r["speedup"] else "      -"
    return (f"{r['task']:58s} {r['kernel']:7s} {ms(r['t_ref_ms'])} {ms(r['t_kernel_ms'])} {speed} "
            f"{r['status']:13s} {(r['message'] or '')[:60]}")


if __name__ == "__main__":
    main()
