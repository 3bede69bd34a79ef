"""Evaluates every GPU kernel shipped with the tasks (seeds of both backends, experts) on an
NVIDIA GPU in device mode at full size, and writes one JSON and one markdown table.

    python scripts/gpu_check.py OUT_DIR [--tasks ID,ID] [--budget-s 420] [--workers 4]
                                [--cheats FILE:TASK,...] [--serial] [--dry-run]

Every suite's tasks (``list_tasks()``) and their kernel files with target ``gpu`` (``seed``,
``seed_mosaic``, ``expert*``) are evaluated, the priority operators first (8p, 12p, 1p).
Evaluations run ``--workers`` at once: tracers, compiles and checks overlap, and the
evaluator's device lease keeps every timing alone on the chip (``--serial`` runs the trusted
runners one at a time instead, as before the lease, to compare throughput and medians).
Past ``--budget-s`` no new evaluation starts and the rest are listed as ``not_run``.
``--cheats`` also runs the named adversarial kernels (each must not be judged ``correct``).

On a machine without a GPU it stops at once with a one-line error; ``--dry-run`` runs the
same pipeline in interpret mode at small size instead (to test the script on a CPU).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

FIRST = ("8p_gemm", "12p_rmsnorm", "1p_flash_attention")
# Shorter timing than the evaluator's default (the check has minutes for ~100 kernels); the
# figures stay medians over interleaved, input-rotated repetitions after a warm-up.
CHECK_TIMING = {"warmup": 2, "max_warmup": 6, "warmup_budget_s": 2.0, "min_reps": 6,
                "max_reps": 30, "budget_s": 1.0, "device_reps": 10}
COLUMNS = ("task", "kernel", "backend", "t_ref_ms", "t_kernel_ms", "speedup", "spread",
           "timing_method", "status")


def jobs(task_ids: str | None) -> list[tuple[str, str, Path]]:
    """(task id, kernel kind, path) for every shipped GPU kernel, priority tasks first."""
    from jaxbench.runs.jobs import kernel_unavailable
    from jaxbench.tasks import get_task, list_tasks

    tasks = [get_task(t) for t in task_ids.split(",")] if task_ids else list_tasks()
    found = [(t.id, kind, path) for t in tasks
             for (kind, target), path in sorted(t.kernel_files().items())
             if target == "gpu" and not kernel_unavailable(kind)]
    return sorted(found, key=lambda j: (j[0] not in FIRST, FIRST.index(j[0]) if j[0] in FIRST
                                        else 0))


def record(result: Any, kind: str, wall_s: float) -> dict:
    r = result.to_event()  # the EvaluationResult as its JSON
    time_stage = r.get("stages", {}).get("time", {})
    row = {k: r.get(k) for k in (
        "task", "status", "stage", "message", "t_ref_ms", "t_kernel_ms", "speedup", "max_abs_err",
        "compile_s", "device_kind", "judged_on", "isolation", "timing_method", "kernel_backend")}
    row.update(kernel=kind, backend=r.get("kernel_backend"), wall_s=round(wall_s, 2),
               spread=time_stage.get("spread"), t_ref_iqr_ms=time_stage.get("t_ref_iqr_ms"),
               t_kernel_iqr_ms=time_stage.get("t_kernel_iqr_ms"),
               wall_clock=time_stage.get("wall"), device_error=time_stage.get("device_error"),
               # the device's exclusive share of the evaluation (the lease), and the wait for it
               time_s=time_stage.get("seconds"), lease_wait_s=time_stage.get("lease_wait_s"),
               stages={k: v.get("seconds") for k, v in r.get("stages", {}).items()
                       if isinstance(v, dict)})
    return row


def markdown(rows: list[dict], header: str) -> str:
    def cell(row: dict, key: str) -> str:
        value = row.get(key)
        if value is None:
            return "-"
        if key == "speedup":
            return f"{value:.2f}x"
        if key == "spread":
            return f"{value:.1%}"
        if key.endswith("_ms"):
            return f"{value:.3f}"
        return str(value)

    lines = [header, "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---:" if c in ("t_ref_ms", "t_kernel_ms", "speedup", "spread")
                            else "---" for c in COLUMNS) + "|"]
    lines += ["| " + " | ".join(cell(r, c) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="directory for gpu_check.json and gpu_check.md")
    parser.add_argument("--tasks", default=None, help="comma-separated task IDs (default: all)")
    parser.add_argument("--timeout", type=float, default=240.0, help="per evaluation, seconds")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="start no evaluation after this many seconds")
    parser.add_argument("--workers", type=int, default=4, help="evaluations in flight at once")
    parser.add_argument("--serial", action="store_true",
                        help="trusted runners one at a time (no device lease pipelining)")
    parser.add_argument("--dry-run", action="store_true", help="interpret mode, small size (no GPU)")
    parser.add_argument("--cheats", default="", help="FILE:TASK pairs, comma-separated")
    args = parser.parse_args()
    from jaxbench.backends import accelerator_platform, device_kind

    if not args.dry_run and accelerator_platform() != "gpu":
        sys.exit("gpu_check: error: no NVIDIA GPU is visible to JAX; run it on a GPU host, or "
                 "pass --dry-run to test the script here")
    from jaxbench.backends.host import versions
    from jaxbench.evaluator import Evaluator

    mode, size = ("interpret", "small") if args.dry_run else ("device", "full")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    todo = [(t, kind, p) for t, kind, p in jobs(args.tasks)]
    todo += [(pair.rsplit(":", 1)[1], "cheat", Path(pair.rsplit(":", 1)[0]))
             for pair in filter(None, args.cheats.split(","))]
    started = time.monotonic()
    rows: list[dict | None] = [None] * len(todo)
    with Evaluator(spares=min(args.workers, 2)) as evaluator:
        if args.serial:  # one trusted runner on the chip at a time (the path before the lease)
            gpu = threading.Lock()
            run = evaluator.runners.run

            def serialized(*a: object, **k: object) -> object:
                with gpu:
                    return run(*a, **k)

            evaluator.runners.run = serialized  # type: ignore[method-assign]

        def one(i: int) -> None:
            task, kind, path = todo[i]
            if time.monotonic() - started > args.budget_s:
                rows[i] = {"task": task, "kernel": kind, "status": "not_run",
                           "message": f"the check's {args.budget_s:g} s budget was spent"}
                return
            t0 = time.monotonic()
            r = evaluator.evaluate(path, task, target="gpu", mode=mode, size=size,
                                   timeout_s=args.timeout, timing=CHECK_TIMING)
            rows[i] = record(r, kind, time.monotonic() - t0) | (
                {"file": str(path)} if kind == "cheat" else {})
            row = rows[i]
            print(f"{row['task']:45s} {kind:12s} {str(row['backend']):10s} "
                  f"{row['status']:13s} {row['speedup'] or '-'} {(row['message'] or '')[:70]}",
                  flush=True)

        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            list(pool.map(one, range(len(todo))))
    done = [r for r in rows if r is not None]
    report = {"device_kind": device_kind(), "mode": mode, "size": size, "versions": versions(),
              "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "timing": CHECK_TIMING,
              "wall_s": round(time.monotonic() - started, 1), "results": done}
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    kernels = [r for r in done if r["kernel"] != "cheat"]
    ok = sum(r["status"] == "correct" for r in kernels)
    ran = sum(r["status"] != "not_run" for r in kernels)
    caught = sum(r["status"] != "correct" for r in done if r["kernel"] == "cheat")
    header = (f"GPU kernels on {report['device_kind']} ({mode} mode, {size} size, JAX "
              f"{report['versions'].get('jax')}): {ok}/{ran} correct of {len(kernels)} kernels")
    (out / "gpu_check.md").write_text(markdown(done, header))
    print(f"{header}; {caught}/{len(done) - len(kernels)} cheats caught; "
          f"written to {out}/gpu_check.json and gpu_check.md")


if __name__ == "__main__":
    main()
