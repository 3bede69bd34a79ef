"""Pipelined evaluation: evaluations per minute against the number in flight, in one run.

Three parts, each measured side by side in this run:

- ``interpret``: the real evaluator (sandboxed tracers, trusted runners, float32 truths) on
  small shipped seeds in interpret mode, with 1, 2, 4 and 8 evaluations in flight on this
  host; evaluations per minute and the ratio to one at a time.
- ``device``: a simulated chip with its one owner (as on a TPU or a GPU: one trusted
  process per chip does every request's device work, one request at a time). The untrusted
  side is real (the tracer traces each seed); the chip's owner is a stand-in that spends
  ``--compile-s`` compiling and checking, ``--time-s`` timing and a recheck, alone. It
  prints evaluations per minute, the share of the wall the pretend chip was busy, and the
  bound ``60 / (compile_s + time_s + recheck)`` that a chip busy all the time reaches. No
  two requests' use of the chip may overlap.
- ``latency``: the p50 of one small evaluation through the evaluator against the same
  checks done bare in this process (:func:`jaxbench.evaluator.inprocess.check_in_process`).

Run from the repository root (about 10 minutes on 2 cores)::

    JAX_PLATFORMS=cpu python benchmarks/pipeline_throughput.py [--evals 8] [--levels 1 2 4 8]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jaxbench.evaluator.parent.case as parent_module  # noqa: E402
from jaxbench.evaluator import Evaluator  # noqa: E402
from jaxbench.evaluator.inprocess import check_in_process  # noqa: E402
from jaxbench.evaluator.parent.compare import GroundTruth  # noqa: E402
from jaxbench.evaluator.parent.judge_client import RunnerOutcome  # noqa: E402
from jaxbench.tasks import get_task  # noqa: E402

TASKS = ["12p_rmsnorm", "8p_gemm", "19k_matmul_subtract_multiply_relu", "9p_swiglu_mlp"]
DEVICE_KIND = "TPU v5 lite"  # the simulated chip


def seeds(n: int, target: str = "tpu") -> list[tuple[str, str]]:
    """``n`` (task, source) pairs cycling over TASKS' seeds for ``target``; each source
    differs by a comment, as the samples of a search do."""
    files = [(t, get_task(t).kernel_files()[("seed", target)].read_text()) for t in TASKS]
    return [(files[i % len(files)][0], files[i % len(files)][1] + f"\n# sample {i}\n")
            for i in range(n)]


def throughput(evaluator: Any, jobs: list[tuple[str, str]], in_flight: int,
               **options: Any) -> tuple[float, list[dict[str, Any]]]:
    """(wall seconds, results) of evaluating ``jobs`` with ``in_flight`` at once."""
    started = time.monotonic()
    with ThreadPoolExecutor(in_flight) as threads:
        results = list(threads.map(lambda job: evaluator.evaluate(job[1], job[0], **options), jobs))
    return time.monotonic() - started, results


class SimulatedDevice:
    """Stands in for a chip's one owner: correct outputs (the float32 truth in the kernel's
    dtype), then the chip used for compiling, timing and a recheck, one request at a time.
    Logs every use of the pretend chip."""

    def __init__(self, compile_s: float, time_s: float, recheck_s: float) -> None:
        self.compile_s, self.time_s, self.recheck_s = compile_s, time_s, recheck_s
        self.used: list[tuple[str, float, float, str]] = []
        self._lock = threading.Lock()
        self._owner = threading.Lock()

    def _use(self, phase: str, seconds: float, name: str) -> None:
        start = time.monotonic()
        time.sleep(seconds)
        with self._lock:
            self.used.append((phase, start, time.monotonic(), name))

    def run(self, request: dict[str, Any], timeout_s: float) -> RunnerOutcome:
        import jax
        import numpy as np

        from jaxbench.evaluator.common.arrays import pack
        from jaxbench.tasks.spec import float32_reference

        task, size = get_task(request["task"]), request["size"]
        labelled = [(f"trial{i}", k) for i, k in enumerate(request["trial_keys"])]
        labelled += [(f"recheck{i}", k) for i, k in enumerate(request["recheck_keys"])]
        fn = float32_reference(task)
        truths = [(label, key, [np.asarray(x, np.float32) for x in jax.tree_util.tree_leaves(
            fn(*task.make_inputs(jax.random.wrap_key_data(np.asarray(key, np.uint32)), size)))])
            for label, key in labelled]
        dtypes = [s.dtype for s in jax.tree_util.tree_leaves(task.output_shapes(size))]
        outputs = [(label, key, [np.asarray(x).astype(d) for x, d in zip(t, dtypes, strict=True)])
                   for label, key, t in truths]
        name = request["dir"]
        waiting = time.monotonic()
        with self._owner:
            waited = time.monotonic() - waiting
            self._use("compile", self.compile_s, name)
            self._use("time", self.time_s, name)
            self._use("recheck", self.recheck_s, name)
        directory = Path(request["dir"])
        data, layout = pack(outputs)
        (directory / "outputs.npy").write_bytes(data)
        truth_data, truth_layout = pack(truths)
        (directory / "truth.npy").write_bytes(truth_data)
        samples = [0.002, 0.0021, 0.0019]
        return RunnerOutcome({
            "status": "ran", "trials": layout, "truth": truth_layout, "device_kind": DEVICE_KIND,
            "backend": "tpu", "structure": {"kernel_calls": 1},
            "timing": {"ref_s": samples, "kernel_s": samples, "input_sets": 3, "warmup_rounds": 3},
            "stages": {"time": {"seconds": self.time_s}}}, waited_s=waited)

    def close(self) -> None:
        pass


def clashes(used: list[tuple[str, float, float, str]]) -> int:
    """Pairs of uses of the chip by two requests that overlap (one owner: none)."""
    return sum(1 for i, a in enumerate(used) for b in used[i + 1:]
               if b[3] != a[3] and a[1] < b[2] and b[1] < a[2])


def part_interpret(levels: list[int], n: int) -> list[dict[str, Any]]:
    rows = []
    for in_flight in levels:
        with Evaluator(spares=min(in_flight, 2)) as evaluator:
            throughput(evaluator, seeds(1), 1, target="tpu")  # warm: runners, truths
            wall, results = throughput(evaluator, seeds(n), in_flight, target="tpu")
        statuses = sorted({r.status for r in results})
        rows.append({"part": "interpret", "in_flight": in_flight, "evals": n,
                     "wall_s": round(wall, 1), "per_min": round(60 * n / wall, 2),
                     "statuses": statuses})
        print(f"interpret  in flight {in_flight}: {n} evaluations in {wall:6.1f} s "
              f"= {60 * n / wall:5.1f}/min {statuses}", flush=True)
    return rows


def part_device(levels: list[int], n: int, compile_s: float, time_s: float) -> list[dict[str, Any]]:
    parent_module.resolve_mode = lambda mode, target: "device"
    parent_module.device_kind = lambda: DEVICE_KIND
    rows = []
    for in_flight in levels:
        device = SimulatedDevice(compile_s, time_s, recheck_s=0.1)
        with Evaluator(spares=min(in_flight, 2)) as evaluator:
            evaluator._owners = device  # the chip's owner, simulated
            throughput(evaluator, seeds(1), 1, target="tpu", mode="device")
            device.used.clear()
            wall, results = throughput(evaluator, seeds(n), in_flight, target="tpu",
                                       mode="device")
        busy = sum(e - s for _, s, e, _ in device.used)
        bound = 60 / (compile_s + time_s + device.recheck_s)
        statuses = sorted({r.status for r in results})
        rows.append({"part": "device", "in_flight": in_flight, "evals": n, "wall_s": round(wall, 1),
                     "per_min": round(60 * n / wall, 2), "chip_busy_share": round(busy / wall, 3),
                     "bound_per_min": round(bound, 2), "clashes": clashes(device.used),
                     "statuses": statuses})
        print(f"device     in flight {in_flight}: {n} evaluations in {wall:6.1f} s "
              f"= {60 * n / wall:5.1f}/min, the chip busy {100 * busy / wall:4.0f}% of the wall "
              f"(bound {bound:.1f}/min), {clashes(device.used)} clashes {statuses}",
              flush=True)
    return rows


def part_latency(reps: int) -> dict[str, Any]:
    task = TASKS[0]
    source = get_task(task).kernel_files()[("seed", "tpu")].read_text()
    harness, bare = [], []
    truth = GroundTruth()
    with Evaluator(spares=1) as evaluator:
        evaluator.evaluate(source, task, target="tpu", trials=1)  # warm
        check_in_process(source, task, target="tpu", trials=1, truth=truth)
        for i in range(reps):  # alternating, so that both sides see the same host
            variant = source + f"\n# rep {i}\n"
            started = time.monotonic()
            result = evaluator.evaluate(variant, task, target="tpu", trials=1)
            harness.append(time.monotonic() - started)
            assert result.status == "correct", result.message
            started = time.monotonic()
            out = check_in_process(variant, task, target="tpu", trials=1, truth=truth)
            bare.append(time.monotonic() - started)
            assert out["ok"], out
    row = {"part": "latency", "task": task, "reps": reps,
           "evaluator_p50_s": round(statistics.median(harness), 2),
           "bare_p50_s": round(statistics.median(bare), 2)}
    row["ratio"] = round(row["evaluator_p50_s"] / row["bare_p50_s"], 2)
    print(f"latency    {task}: evaluator p50 {row['evaluator_p50_s']} s, bare in-process p50 "
          f"{row['bare_p50_s']} s, ratio {row['ratio']}x", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--evals", type=int, default=8, help="evaluations per level")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--compile-s", type=float, default=1.0,
                        help="simulated chip: seconds of compiling and checking")
    parser.add_argument("--time-s", type=float, default=1.5,
                        help="simulated chip: seconds of timing")
    parser.add_argument("--reps", type=int, default=5, help="latency repetitions")
    parser.add_argument("--parts", nargs="+", default=["interpret", "device", "latency"],
                        choices=["interpret", "device", "latency"])
    args = parser.parse_args()
    report: dict[str, Any] = {"cpu_count": os.cpu_count(), "tasks": TASKS}
    if "interpret" in args.parts:
        report["interpret"] = part_interpret(args.levels, args.evals)
    if "latency" in args.parts:
        report["latency"] = part_latency(args.reps)
    if "device" in args.parts:
        report["device"] = part_device(args.levels, args.evals, args.compile_s, args.time_s)
    for part in ("interpret", "device"):
        rows = report.get(part) or []
        base = next((r["per_min"] for r in rows if r["in_flight"] == 1), None)
        for r in rows:
            r["vs_one"] = round(r["per_min"] / base, 2) if base else None
        if rows:
            print(f"{part:10s} " + "  ".join(f"{r['in_flight']}: {r['per_min']}/min ({r['vs_one']}x)"
                                             for r in rows))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
