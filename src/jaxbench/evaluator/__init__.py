"""The evaluator: one candidate kernel through the staged protocol of DESIGN.md.

``static`` runs here (parsing only); ``trace``, ``lower``, the correctness runs,
``time`` and ``recheck`` run in a fresh sandboxed worker process; the verdict on
correctness is made here, against a float32 ground truth the worker never sees.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

from jaxbench.backends import resolve_mode
from jaxbench.backends.peaks import peak_for, roofline_fraction
from jaxbench.evaluator.compare import GroundTruth, check_outputs, derive_keys, read_outputs
from jaxbench.evaluator.pool import WorkerOutcome, WorkerPool
from jaxbench.evaluator.result import STAGES, STATUSES, StageFailure, new_result
from jaxbench.evaluator.static import check_source, declared_target
from jaxbench.tasks import get_task

DEFAULT_TIMEOUT_S = {"interpret": 600.0, "device": 900.0}
DEFAULT_MEMORY_GB = 8.0
TIMING_CACHE_BYTES = 64 * 2**20
SPEEDUP_REVIEW_THRESHOLD = 10.0


def read_source(source_or_path: str | os.PathLike[str]) -> tuple[str, str]:
    """(source, filename) from a path or from source text."""
    if isinstance(source_or_path, os.PathLike) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and source_or_path.endswith(".py")):
        path = Path(source_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"kernel file {str(path)!r} does not exist")
        return path.read_text(), str(path)
    return str(source_or_path), "<kernel>"


class Evaluator:
    """Evaluates candidates with one worker pool and one ground-truth cache.

    Args:
        secret: the run's secret; correctness inputs derive from it. Drawn fresh
            when not given, so a kernel cannot tune itself to its test inputs.
        spares: warm worker processes kept waiting (0: start one per evaluation).
        work_dir: where the workers' private directories are made (default: the temp dir).
    """

    def __init__(self, secret: bytes | None = None, spares: int = 1,
                 work_dir: str | os.PathLike[str] | None = None) -> None:
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        self.pool = WorkerPool(spares=spares, root=work_dir)
        self.truth = GroundTruth()

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def evaluate(
        self,
        source_or_path: str | os.PathLike[str],
        task_id: str,
        *,
        target: str | None = None,
        mode: str = "auto",
        size: str = "small",
        trials: int = 3,
        timeout_s: float | None = None,
        memory_gb: float = DEFAULT_MEMORY_GB,
        tpu_interpret: bool = True,
        max_outside_flops_fraction: float = 0.1,
        timing: dict[str, Any] | None = None,
        save_ir: str | os.PathLike[str] | None = None,
    ) -> dict[str, Any]:
        """Runs the staged protocol on one candidate; returns the evaluation-result dict."""
        source, filename = read_source(source_or_path)
        task = get_task(task_id)
        if trials < 1:
            raise ValueError("trials must be at least 1")
        target = target or declared_target(source) or "tpu"
        if target not in ("tpu", "gpu"):
            raise ValueError(f"unknown target {target!r}; use tpu or gpu")
        task.dims(size)  # unknown size -> KeyError with the sizes listed
        mode = resolve_mode(mode, target)
        result = new_result(task.id, target, mode, size, source)
        result["kernel_file"] = filename
        started = time.monotonic()
        try:
            check_source(source, filename)
            result["stages"]["static"] = {"seconds": round(time.monotonic() - started, 4)}
            self._run_worker(result, task, source, filename, target, mode, size, trials,
                             timeout_s or DEFAULT_TIMEOUT_S[mode], memory_gb, tpu_interpret,
                             max_outside_flops_fraction, timing or {}, save_ir)
        except StageFailure as failure:
            result.update(status=failure.status, stage=failure.stage, message=failure.message)
        result["wall_s"] = round(time.monotonic() - started, 3)
        assert result["status"] in STATUSES, result["status"]
        return result

    def _run_worker(self, result: dict[str, Any], task: Any, source: str, filename: str,
                    target: str, mode: str, size: str, trials: int, timeout_s: float,
                    memory_gb: float, tpu_interpret: bool, outside_fraction: float,
                    timing: dict[str, Any], save_ir: str | os.PathLike[str] | None) -> None:
        memory_bytes = int(memory_gb * 2**30)
        job = {
            "source": source, "filename": filename, "task": task.id, "target": target,
            "mode": mode, "size": size,
            "trial_keys": derive_keys(self.secret, task.id, size, trials, "trial"),
            "recheck_keys": derive_keys(self.secret, task.id, size, 1, "recheck"),
            "tpu_interpret": tpu_interpret,
            # RLIMIT_AS breaks CUDA's address-space reservations; the RSS watchdog remains.
            "memory_bytes": memory_bytes if mode == "interpret" else None,
            "file_bytes": 1 << 30,
            "max_outside_flops_fraction": outside_fraction,
            "timing": timing,
            "save_ir": save_ir is not None,
        }
        if mode == "device":
            # Input sets rotated during timing: at least 3, enough to exceed ~64 MiB of cache.
            per_set = max(sum(s.nbytes for s in task.input_specs(size)), 1)
            sets = min(16, max(3, -(-TIMING_CACHE_BYTES // per_set)))
            job["timing_sets"] = sets
            job["timing_keys"] = derive_keys(self.secret, task.id, size, sets, "timing")
        # The ground truth is computed here while the worker runs (the worker never sees it).
        truth_thread = threading.Thread(
            target=self.truth.prefetch, args=(task, size, job["trial_keys"]), daemon=True)
        if mode == "interpret":  # on a device, keep the accelerator to the worker
            truth_thread.start()
        outcome = self.pool.run(job, timeout_s, memory_bytes)
        if truth_thread.is_alive():
            truth_thread.join()
        try:
            self._judge(result, task, size, outcome, timeout_s, memory_gb)
        finally:
            if save_ir is not None:
                self._save_artifacts(result, outcome, Path(save_ir))
            shutil.rmtree(outcome.dir, ignore_errors=True)

    @staticmethod
    def _save_artifacts(result: dict[str, Any], outcome: WorkerOutcome, directory: Path) -> None:
        from jaxbench.evaluator.artifacts import write_artifacts

        data = _read_json(outcome.dir / "artifacts.json")
        extra = {k: result.get(k) for k in ("compile_s", "t_ref_ms", "t_kernel_ms", "speedup",
                                             "roofline_fraction", "peak_flops", "peak_bytes_per_s")}
        result["artifacts"] = {"dir": str(directory),
                               "files": write_artifacts(data, directory, extra)}

    def _judge(self, result: dict[str, Any], task: Any, size: str, outcome: WorkerOutcome,
               timeout_s: float, memory_gb: float) -> None:
        report = _read_json(outcome.dir / "result.json")
        result["stages"].update(report.get("stages", {}))
        for field in ("compile_s", "device_kind", "backend", "setup_s"):
            if report.get(field) is not None:
                result[field] = report[field]
        last_stage = next(reversed(result["stages"]), "static")
        if outcome.timed_out:
            raise StageFailure("timeout", _next_stage(last_stage),
                               f"no verdict within {timeout_s:g} s (wall clock); worker killed")
        if outcome.memory_exceeded:
            raise StageFailure("crashed", _next_stage(last_stage),
                               f"worker exceeded the {memory_gb:g} GiB memory limit; killed")
        status = report.get("status")
        if status in STATUSES:
            raise StageFailure(status, report.get("stage", last_stage), report.get("message", ""))
        if status != "ran" or outcome.returncode != 0:
            raise StageFailure("crashed", _next_stage(last_stage), _crash_message(outcome))
        timing = result["stages"].get("time", {})
        for field in ("t_ref_ms", "t_kernel_ms", "speedup"):
            result[field] = timing.get(field)
        if result["t_kernel_ms"]:
            kind = result.get("device_kind", "")
            result["roofline_fraction"] = roofline_fraction(
                task.flops(size), task.bytes(size), result["t_kernel_ms"] / 1e3, kind)
            result["peak_flops"], result["peak_bytes_per_s"] = peak_for(kind) or (None, None)
        outputs = read_outputs(outcome.dir / "outputs.npy", report["trials"])
        expected = task.output_shapes(size)
        worst_abs, worst_rel = 0.0, 0.0
        for trial in report["trials"]:
            truth = self.truth(task, size, trial["key"])
            verdict = check_outputs(outputs[trial["label"]], expected, truth, task.atol, task.rtol)
            if verdict.max_abs_err is not None:
                worst_abs = max(worst_abs, verdict.max_abs_err)
                worst_rel = max(worst_rel, verdict.rel_err or 0.0)
            result["max_abs_err"], result["rel_err"] = worst_abs, worst_rel
            raced = trial["label"] == "tpu_interpreter" and \
                result["stages"].get("correct", {}).get("tpu_interpreter_race")
            if not verdict.ok:
                stage = "recheck" if trial["label"].startswith("recheck") else "correct"
                where = "" if trial["label"].startswith("trial") else f" ({trial['label']})"
                if raced:
                    where += ("; the TPU interpreter detected a data race (two simulated cores, "
                              "shuffled parallel grid): the result depends on execution order")
                raise StageFailure("incorrect", stage, f"{verdict.message}{where}")
            if raced:
                result.setdefault("warnings", []).append(
                    "the TPU interpreter detected a write-write data race, but the outputs are "
                    "correct (e.g. outputs used as scratch and discarded)")
        result["trials"] = len(report["trials"])
        result.update(status="correct", stage=last_stage, message="")
        if (result["speedup"] or 0) > SPEEDUP_REVIEW_THRESHOLD:
            result["review"] = (f"speedup {result['speedup']:.1f}x exceeds "
                                f"{SPEEDUP_REVIEW_THRESHOLD:g}x: check the kernel by hand")


def _read_json(path: Path) -> dict[str, Any]:
    """A file the worker wrote, or {} when it died before writing (or mid-write)."""
    try:
        return json.loads(path.read_text() or "{}")
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _next_stage(stage: str) -> str:
    """The stage a worker was in when it died, given the last one it finished."""
    if stage not in STAGES:
        return "trace"
    return STAGES[min(STAGES.index(stage) + 1, len(STAGES) - 1)]


def _crash_message(outcome: WorkerOutcome) -> str:
    code = outcome.returncode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        why = f"worker died from signal {name}"
    else:
        why = f"worker exited with code {code} before reporting a verdict"
    tail = [ln for ln in outcome.stderr_tail.splitlines() if ln.strip()][-2:]
    return why + (": " + " | ".join(tail)[-300:] if tail else "")


def evaluate(source_or_path: str | os.PathLike[str], task_id: str, **options: Any) -> dict[str, Any]:
    """Evaluates one candidate (path or source text) on one task; see :meth:`Evaluator.evaluate`."""
    secret = options.pop("secret", None)
    with Evaluator(secret=secret, spares=0) as evaluator:
        return evaluator.evaluate(source_or_path, task_id, **options)


__all__ = ["Evaluator", "StageFailure", "evaluate", "read_source"]
