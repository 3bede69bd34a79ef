"""The parent's protocol: one candidate kernel through the staged protocol, across a trust
boundary (the package's docstring, :mod:`jaxbench.evaluator`, tells the whole story).

:class:`Evaluator` owns the warm untrusted tracers (:mod:`jaxbench.evaluator.parent.pool`), the warm
trusted runners (:mod:`jaxbench.evaluator.parent.judge_client`) and the ground-truth cache; it builds
the tracer's job, reads back what the tracer left (:mod:`jaxbench.evaluator.parent.untrusted`), sends
the exports to the judge, compares the judge's outputs with the float32 truth and computes every
figure. Also here: the chip a job is lowered for, what `lower` proved (``lowering_fidelity``),
the Triton compile step, and the Ctrl-C helper :func:`kill_children`.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import jax

from jaxbench.backends import device_kind, resolve_mode
from jaxbench.backends.chips import (
    MOSAIC_GPU_FEATURES,
    capability,
    chip_or_default,
    default_chip,
    resolve_chip,
)
from jaxbench.backends.peaks import peak_for, roofline_fraction
from jaxbench.evaluator.common.arrays import MalformedOutputs, unpack
from jaxbench.evaluator.common.procs import kill_children
from jaxbench.evaluator.common.schema import (
    RULES,
    STAGES,
    STATUSES,
    StageFailure,
    new_result,
)
from jaxbench.evaluator.judge.compare import GroundTruth, check_outputs, derive_keys
from jaxbench.evaluator.parent.case import Case
from jaxbench.evaluator.parent.judge_client import RunnerOutcome, RunnerPool
from jaxbench.evaluator.parent.lease import DeviceLease
from jaxbench.evaluator.parent.pool import WorkerPool, remove_tree
from jaxbench.evaluator.parent.static import (
    MISMATCH_HINT,
    check_source,
    declared_target,
    parses,
    preloaded,
    wrong_target_hint,
)
from jaxbench.evaluator.parent.timeouts import default_timeout
from jaxbench.evaluator.parent.untrusted import (
    HANDOVER,
    MAX_HANDOVER_BYTES,
    keep_untrusted_text,
    next_stage,
    printable_result,
    read_file,
    read_probe,
    read_untrusted_status,
    untrusted_verdict,
)
from jaxbench.tasks import get_task, task_file_of

DEFAULT_MEMORY_GB = 8.0
TIMING_CACHE_BYTES = 64 * 2**20
SPEEDUP_REVIEW_THRESHOLD = 10.0
PLATFORM = {"tpu": "tpu", "gpu": "cuda"}


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
    """Evaluates candidates with warm untrusted tracers, warm trusted runners and one
    ground-truth cache.

    Args:
        secret: the run's secret; correctness inputs derive from it. Drawn fresh
            when not given, so a kernel cannot tune itself to its test inputs.
        spares: warm tracer processes (and trusted runners) kept waiting.
        work_dir: where the tracers' private directories are made (default: the temp dir).

    ``evaluate`` may be called from many threads at once: each call gets its own tracer and
    trusted runner, so tracing, exporting, compiling and checking of different candidates
    overlap on the host's cores. On a device, timing is the one part that is serialized:
    the runners share :attr:`lease` (:mod:`jaxbench.evaluator.parent.lease`), which a runner holds
    exclusively while it times, so no timing overlaps another candidate's compile, check or
    timing. A TPU is opened by one process at a time, so there the trusted runs themselves
    go one at a time (tracing still overlaps them).
    """

    def __init__(self, secret: bytes | None = None, spares: int = 1,
                 work_dir: str | os.PathLike[str] | None = None) -> None:
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        self.pool = WorkerPool(spares=spares, root=work_dir)
        self.runners = RunnerPool(spares=min(spares, 1))
        self.truth = GroundTruth()
        self.lease = DeviceLease()
        self._tpu = threading.Lock()
        self._prefetching: list[threading.Thread] = []
        self._aborted = False

    def close(self) -> None:
        self.pool.close()
        self.runners.close()
        self.truth.cancel()  # truths not started yet are not needed any more
        if self._aborted:  # the caller leaves with os._exit; nothing must wait for XLA
            return
        for thread in self._prefetching:  # never leave XLA work running at interpreter exit
            thread.join()

    def abort(self) -> None:
        """Stops everything in flight (Ctrl-C): no new tracers or runners, the warm ones and
        the busy ones killed with their process groups. Evaluations in flight then end as
        ``crashed``; callers must discard them."""
        self._aborted = True
        self.pool.close()
        self.runners.close()
        kill_children()

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
        debug: bool = False,
        chip: str | None = None,
    ) -> dict[str, Any]:
        """Runs the staged protocol on one candidate; returns the evaluation-result dict.

        ``debug`` (``jaxbench eval --debug``) allows ``jax.debug.print`` and runs the kernel
        in interpret mode on the untrusted side, so that its printed output can be shown; such
        a result is marked ``"debug": true`` and never counts (a run directory refuses it).
        ``chip`` (``--chip``): the chip the kernel is judged for (its limits, its identity while
        traced, Triton's target); by default the suite's (PallasBench GPU tasks: an A100;
        otherwise a TPU v6e or an H200), in device mode the attached one."""
        source, filename = read_source(source_or_path)
        task = get_task(task_id)
        if trials < 1:
            raise ValueError("trials must be at least 1")
        declared = declared_target(source)
        assumed = target is None and declared is None
        target = target or declared or "tpu"
        if target not in ("tpu", "gpu"):
            raise ValueError(f"unknown target {target!r}; use tpu or gpu")
        task.dims(size)  # unknown size -> KeyError with the sizes listed
        if debug and mode == "device":
            raise ValueError("--debug runs the kernel in interpret mode on the CPU; drop "
                             "--mode device")
        mode = "interpret" if debug else resolve_mode(mode, target)
        chip_kind = judged_chip(task.suite, target, mode, chip)
        result = new_result(task.id, target, mode, size, source)
        result.update(kernel_file=filename, judged_on=None, isolation=None, kernel_backend=None,
                      timing_method="wall_clock_interleaved" if mode == "device" else None,
                      chip=chip_kind, lowering_fidelity=lowering_fidelity(target, mode, chip_kind))
        timeout_s = timeout_s or default_timeout(task.id, mode)
        result["timeout_s"] = timeout_s
        if debug:
            result["debug"] = True
        if assumed and parses(source):
            result["warnings"] = [f'the kernel declares no TARGET: evaluated for {target} (add '
                                  f'TARGET = "tpu" or "gpu" to the file, or pass --target)']
        started = time.monotonic()
        try:
            check_source(source, filename, debug=debug)
            result["stages"]["static"] = {"seconds": round(time.monotonic() - started, 4)}
            case = Case(task, size, target, mode, trials, timeout_s, int(memory_gb * 2**30),
                         tpu_interpret, max_outside_flops_fraction, timing or {}, save_ir, debug,
                         chip_kind)
            try:
                self._evaluate(result, case, source, filename)
            except (StageFailure, KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - the run goes on: a verdict, not a bug
                raise StageFailure("crashed", next_stage(next(reversed(result["stages"]))),
                                   f"the evaluator failed on this kernel: {type(exc).__name__}: "
                                   f"{str(exc)[:300]}") from None
        except StageFailure as failure:
            message = failure.message
            if failure.status == "compile_error" and failure.stage in ("trace", "lower"):
                hint = wrong_target_hint(source, target)
                # a kernel for the other platform: at `lower` the lowering error is only the
                # mismatch's consequence, so the hint stands alone (other hints come first)
                alone = failure.stage == "lower" and hint.startswith(MISMATCH_HINT)
                message = (hint if alone else f"{hint}; {message}") if hint else message
            if result.get("candidate_frames"):  # where in the kernel file it went wrong
                message += f" (at {result['candidate_frames'][-1].split(': ', 1)[0]})"
            result.update(status=failure.status, stage=failure.stage, rule=failure.rule,
                          message=message)
        result["wall_s"] = round(time.monotonic() - started, 3)
        assert result["status"] in STATUSES, result["status"]
        return printable_result(result)

    # -- the untrusted side ------------------------------------------------------------------
    def _evaluate(self, result: dict[str, Any], case: Case, source: str, filename: str) -> None:
        task, size = case.task, case.size
        keys = {purpose: derive_keys(self.secret, task.id, size, n, purpose)
                for purpose, n in (("trial", case.trials), ("recheck", 1), ("probe", 1),
                                   ("untrusted", case.trials))}
        job = {
            "source": source, "filename": filename, "task": task.id, "size": size,
            "target": case.target, "platform": PLATFORM[case.target], "mode": case.mode,
            "specs": [[list(s.shape), str(s.dtype)] for s in task.input_specs(size)],
            "size_specs": {name: [[list(s.shape), str(s.dtype)] for s in task.input_specs(name)]
                           for name in task.inputs},
            "debug": case.debug,
            "memory_bytes": case.memory_bytes, "file_bytes": 1 << 30,
            # the chip it is judged for (the attached one in device mode): its identity while
            # traced (the judge lowers for it)
            f"{case.target}_device_kind": case.chip,
        }
        if case.debug:  # the one run on the untrusted side, which never counts
            job["fallback_keys"] = keys["untrusted"][:1]
        if case.mode == "interpret":  # the truth is computed here while the others work
            if not case.debug:  # and the trusted runner warms up (on a device, where a TPU
                self.runners.prestart()  # admits one process at a time, only when needed)
            thread = threading.Thread(target=self.truth.prefetch, daemon=True,
                                      args=(task, size, keys["trial"] + keys["probe"]))
            thread.start()
            self._prefetching = [t for t in self._prefetching if t.is_alive()] + [thread]
        outcome = self.pool.run(job, case.timeout_s, case.memory_bytes)
        # What the parent set up and saw before any candidate code ran, never the tracer's word.
        result["isolation"] = getattr(outcome, "isolation", None) or "unknown"
        try:
            status = read_untrusted_status(outcome.dir)
            stages = status.get("stages")
            if isinstance(stages, dict):  # its timings, shown only
                result["stages"].update({k: {"seconds": stages[k]["seconds"]} for k in (
                    "trace", "handover") if isinstance(stages.get(k), dict) and isinstance(
                        stages[k].get("seconds"), (int, float))})
            keep_untrusted_text(result, status, outcome, case)
            untrusted_verdict(status, outcome, case)
            handover = read_file(outcome.dir / HANDOVER, MAX_HANDOVER_BYTES)
            probe = read_probe(outcome.dir, status) if case.debug else {}
        finally:
            remove_tree(outcome.dir)
        if case.debug:
            return self._judge_debug(result, case, probe, keys)
        if handover is None:
            raise StageFailure("crashed", "lower", "the untrusted side handed over no traced "
                                                   "jaxpr (or one over the size limit)")
        self._judge(result, case, handover, keys, source, filename)

    # -- the trusted side ----------------------------------------------------------------------
    def _judge(self, result: dict[str, Any], case: Case, handover: bytes,
               keys: dict[str, list[list[int]]], source: str, filename: str) -> None:
        task, size = case.task, case.size
        directory = Path(tempfile.mkdtemp(prefix="jaxbench-judge-"))
        interpret = case.mode == "interpret"
        try:
            (directory / HANDOVER).write_bytes(handover)
            request = {"dir": str(directory), "task": task.id, "task_file": task_file_of(task.id),
                       "size": size,
                       "platform": PLATFORM[case.target], "target": case.target, "mode": case.mode,
                       "source": source, "filename": filename, "tokamax": any(
                           name.split(".")[0] == "tokamax" for name in preloaded(source)),
                       "tpu_interpreter_key": keys["probe"][0] if (
                           interpret and case.target == "tpu" and case.tpu_interpret) else None,
                       "gpu_interpreter_key": keys["probe"][0] if (
                           interpret and case.target == "gpu") else None,
                       "chip": {"tpu": job_chip(case, "tpu"), "gpu": job_chip(case, "gpu")},
                       "trial_keys": keys["trial"], "recheck_keys": keys["recheck"],
                       "max_outside_flops_fraction": case.max_outside_fraction,
                       "timing": case.timing, "save_ir": case.save_ir is not None}
            if case.mode == "device":
                per_set = max(sum(s.nbytes for s in task.input_specs(size)), 1)
                sets = min(16, max(3, -(-TIMING_CACHE_BYTES // per_set)))
                request["timing_keys"] = derive_keys(self.secret, task.id, size, sets - 1, "timing")
            # On a device the runner's resident size counts mapped device memory: its host-memory
            # watchdog applies in interpret mode only (device memory errors are XLA's to report).
            if case.mode == "device":
                with self._tpu if case.target == "tpu" else contextlib.nullcontext():
                    outcome = self.runners.run(request, case.timeout_s, None, self.lease)
            else:
                outcome = self.runners.run(request, case.timeout_s, case.memory_bytes)
            # The budgets: the judge's estimate from the jaxpr (it names the kernel's line) or
            # its count on the lowered modules, whichever found a problem first.
            budget = None
            if outcome.response and isinstance(outcome.response.get("budget_problem"), str) \
                    and outcome.response["budget_problem"]:
                budget = outcome.response["budget_problem"]
            try:
                response = _runner_verdict(outcome, case, result["stages"])
            except StageFailure as failure:
                if failure.status == "incorrect" and failure.stage == "correct":
                    result["judged_on"] = "trusted_export"  # the judge ran it and saw it wrong
                # The judge's structure rules come first; then a kernel the chip would refuse
                # at some size fails before any correctness verdict.
                if failure.stage != "lower" and isinstance(budget, str):
                    raise StageFailure("compile_error", "lower", budget[:2000]) from None
                raise
            if isinstance(budget, str):
                raise StageFailure("compile_error", "lower", budget[:2000])
            if case.target == "gpu":
                result["kernel_backend"] = response.get("kernel_backend")
                result["lowering_fidelity"] = lowering_fidelity(
                    case.target, case.mode, case.chip, result["kernel_backend"])
                _require_chip_features(result["kernel_backend"], case.chip)
            if case.target == "gpu" and case.mode == "interpret":
                decided = _triton_compile(result, response.get("triton_kernels"), case.chip)
                if not decided:  # shared memory the estimate cannot decide: a warning
                    _warn_uncertain_smem(result, response.get("smem_uncertain"))
            outputs, truths = {}, {}
            # The trusted runner's streams: capped by what the outputs can take (4 bytes an
            # element covers float32 truths), with room for the .npy headers.
            runs = len(request["trial_keys"]) + len(request["recheck_keys"]) + 1
            cap = runs * (4 * sum(math.prod(x.shape) for x in jax.tree_util.tree_leaves(
                task.output_shapes(size))) + (1 << 16))
            try:
                if response.get("trials"):
                    outputs = unpack((directory / "outputs.npy").read_bytes(), response["trials"],
                                     cap)
                if response.get("truth"):
                    truths = unpack((directory / "truth.npy").read_bytes(), response["truth"], cap)
            except (MalformedOutputs, OSError) as exc:
                raise StageFailure("crashed", "correct", f"judge output unreadable: {exc}") from None
        finally:
            remove_tree(directory)
        result["stages"].update(response.get("stages", {}))
        if isinstance(response.get("memory"), list):
            result["stages"].setdefault("lower", {})["memory"] = response["memory"][:64]
            _warn_uncertain_vmem(result, response["memory"])
        for field in ("compile_s", "device_kind", "backend", "kernel_backend"):
            if response.get(field) is not None:
                result[field] = response[field]
        result["structure"] = response.get("structure")
        if case.save_ir is not None:
            self._save_artifacts(result, response, Path(case.save_ir))
        error = result["stages"].get("lower", {}).get("interpret_export_error")
        for label in RACE_CHECKS:
            if isinstance(response.get(label), str):
                result["stages"].setdefault("correct", {})[label] = response[label][:300]
        _warn_tool_faults(result, response.get("tool_faults"))
        if case.mode == "device" or not error:
            result["judged_on"] = "trusted_export"
            judged = [(label, key) for label, key in zip(
                [f"trial{i}" for i in range(case.trials)], keys["trial"], strict=True)]
            judged += [(f"recheck{i}", k) for i, k in enumerate(keys["recheck"])
                       if case.mode == "device" and f"recheck{i}" in outputs]
            missing = [label for label, _ in judged if label not in outputs]
            if missing:
                raise StageFailure("crashed", "correct", f"the judge returned no outputs for {missing}")
        else:  # nothing the judge could run vouches for the outputs: never `correct`
            said = response.get("gpu_interpreter")
            seen = ""
            if "gpu_interpreter" in outputs:  # it can find the kernel wrong, no more
                self._compare(result, case, {"gpu_interpreter": outputs["gpu_interpreter"]},
                              [("gpu_interpreter", keys["probe"][0])],
                              bool(response.get("gpu_interpreter_race")), {})
                seen = ("; JAX's Mosaic GPU interpreter ran it and its outputs matched the "
                        "truth, which cannot make it `correct`")
            elif isinstance(said, str):
                seen = f"; JAX's Mosaic GPU interpreter: {said}"
            raise StageFailure("unverified", "correct", (
                "the kernel has no exportable interpret-mode lowering, so the judge cannot run "
                "it on this CPU and nothing vouches for its outputs (it passed every check up "
                "to lowering; evaluate it on the chip with --mode device): "
                f"{error}{seen}")[:2000])
        if "tpu_interpreter" in outputs:
            judged.append(("tpu_interpreter", keys["probe"][0]))
        self._compare(result, case, outputs, judged, bool(response.get("tpu_interpreter_race")),
                      truths)
        if response.get("timing"):
            from jaxbench.evaluator.judge.timing import summarize

            try:
                figures = summarize(response["timing"])
            except ValueError as exc:
                raise StageFailure("crashed", "time", str(exc)) from None
            result["stages"].setdefault("time", {}).update(figures)
            for field in ("t_ref_ms", "t_kernel_ms", "speedup", "timing_method"):
                result[field] = figures[field]
            kind = result.get("device_kind", "")
            result["roofline_fraction"] = roofline_fraction(
                task.flops(size), task.bytes(size), result["t_kernel_ms"] / 1e3, kind)
            result["peak_flops"], result["peak_bytes_per_s"] = peak_for(kind) or (None, None)
        result["trials"] = case.trials
        last = next(reversed(result["stages"]))
        result.update(status="correct", stage=last if last in STAGES else "correct", message="")
        if (result["speedup"] or 0) > SPEEDUP_REVIEW_THRESHOLD:
            result["review"] = (f"speedup {result['speedup']:.1f}x exceeds "
                                f"{SPEEDUP_REVIEW_THRESHOLD:g}x: check the kernel by hand")

    def _judge_debug(self, result: dict[str, Any], case: Case, probe: dict[str, list[Any]],
                     keys: dict[str, list[list[int]]]) -> None:
        """A debug run's outputs (untrusted, like everything else from there) against the truth:
        shown to help, marked, never a verdict that counts."""
        result["judged_on"] = "untrusted_debug_run"
        result.setdefault("warnings", []).append(
            "debug run: jax.debug.print was allowed and the kernel ran on the untrusted side, "
            "without the trusted judge; this verdict does not count (rerun without --debug)")
        judged = [(f"untrusted{i}", k) for i, k in enumerate(keys["untrusted"][:1])]
        missing = [label for label, _ in judged if label not in probe]
        if missing:
            raise StageFailure("crashed", "correct",
                               f"the debug run returned no outputs for {missing}")
        self._compare(result, case, probe, judged, False, {})
        result["trials"] = len(judged)
        result.update(status="correct", stage="correct", message="")

    def _compare(self, result: dict[str, Any], case: Case, outputs: dict[str, list[Any]],
                 judged: list[tuple[str, list[int]]], raced: bool,
                 truths: dict[str, list[Any]]) -> None:
        """Each judged output against the float32 truth: the runner's on a device (computed
        there at full float32 precision), else this process's on the host CPU."""
        task, size = case.task, case.size
        expected = task.output_shapes(size)
        worst_abs, worst_rel, worst_fraction = 0.0, 0.0, 0.0
        result["tolerance"] = {"atol": task.atol, "rtol": task.rtol}
        for label, key in judged:
            truth = truths[label] if label in truths else self.truth(task, size, key)
            verdict = check_outputs(outputs[label], expected, truth, task.atol, task.rtol)
            if verdict.nonfinite:  # no error figure describes a NaN: none is reported
                result["max_abs_err"] = result["rel_err"] = result["tol_fraction"] = None
            elif verdict.max_abs_err is not None:
                worst_abs = max(worst_abs, verdict.max_abs_err)
                worst_rel = max(worst_rel, verdict.rel_err or 0.0)
                worst_fraction = max(worst_fraction, verdict.tol_fraction or 0.0)
                result["max_abs_err"], result["rel_err"] = worst_abs, worst_rel
                result["tol_fraction"] = round(worst_fraction, 4)
            probe_run = label in RACE_CHECKS
            if not verdict.ok:
                stage = "recheck" if label.startswith("recheck") else "correct"
                where = "" if label.startswith(("trial", "recheck")) else f" ({label})"
                if probe_run and raced:
                    where += (f"; {RACE_CHECKS[label]} detected a data race: the result "
                              "depends on execution order")
                raise StageFailure("incorrect", stage, f"{verdict.message}{where}")
            if probe_run and raced:
                result.setdefault("warnings", []).append(
                    f"{RACE_CHECKS[label]} detected a data race, but the outputs are correct "
                    "(e.g. outputs used as scratch and discarded)")

    @staticmethod
    def _save_artifacts(result: dict[str, Any], response: dict[str, Any], directory: Path) -> None:
        from jaxbench.evaluator.common.artifacts import write_artifacts

        # the jaxpr the judge read and lowered, and its kernels' IR as the judge lowered them
        data = {"jaxpr": response.get("jaxpr"), "kernel_ir": response.get("kernel_ir")}
        data.update(response.get("compiled_artifacts") or {})
        data["stablehlo"] = response.get("stablehlo")  # the module the judge checked and ran
        data["structure"] = response.get("structure")
        extra = {k: result.get(k) for k in ("compile_s", "t_ref_ms", "t_kernel_ms", "speedup",
                                             "roofline_fraction", "peak_flops", "peak_bytes_per_s")}
        result["artifacts"] = {"dir": str(directory),
                               "files": write_artifacts(data, directory, extra)}


def _warn_uncertain_vmem(result: dict[str, Any], figures: list[Any]) -> None:
    """A warning per kernel the judge's VMEM count puts just over its limit, inside the margin
    where the chip's answer is not known (jaxbench.backends.chips.vmem_verdict)."""
    for f in figures:
        if not (isinstance(f, dict) and f.get("vmem_uncertain")):
            continue
        result.setdefault("warnings", []).append(
            f"VMEM: pallas_call #{f.get('kernel')} at size {f.get('size')!r} needs "
            f"{f.get('vmem_bytes', 0) / 2**20:.2f} MiB, just over its "
            f"{f.get('vmem_limit_bytes', 0) / 2**20:g} MiB limit (by at most 1/32 of it, where "
            "real TPU runs have gone both ways): accepted, but the chip may refuse it; raise "
            "vmem_limit_bytes in pltpu.CompilerParams to be sure (docs/vmem-calibration.md)")


def _warn_tool_faults(result: dict[str, Any], faults: Any) -> None:
    """A warning per check whose tool crashed inside its own code (the judge's
    :mod:`jaxbench.evaluator.judge.tool_faults`): not the kernel's fault, so no verdict from it;
    the verdict rests on the other checks."""
    for fault in faults if isinstance(faults, list) else []:
        if not isinstance(fault, dict) or not isinstance(fault.get("text"), str):
            continue
        missed = {"the TPU interpreter": " (its race detection between two simulated cores "
                                         "and shuffled parallel grid did not run: the verdict "
                                         "rests on the interpret-mode trials)",
                  "the Mosaic GPU interpreter": " (its run did not happen)"}.get(
                      fault.get("tool"), "")
        result.setdefault("warnings", []).append(f"tool fault: {fault['text']}{missed}"[:600])
        result.setdefault("tool_faults", []).append(
            {k: str(fault.get(k, ""))[:300] for k in ("tool", "error", "frame", "version",
                                                       "known")})


# The untrusted interpreters' runs, which look for data races as they go.
RACE_CHECKS = {
    "tpu_interpreter": "the TPU interpreter (two simulated cores, shuffled parallel grid)",
    "gpu_interpreter": "the Mosaic GPU interpreter (simulated warpgroups, barriers and TMA)",
}
# What an interpret-mode `correct` does not exclude (docs/evaluator.md, threat model).
INTERPRET_RESIDUAL_RISK = (
    "residual risk: the kernel body ran in JAX's interpreter; its chip lowering was checked "
    "(structure, budgets) but not run, so a body that the chip's compiler lowers to something "
    "other than what the interpreter computes is not excluded")


def lowering_fidelity(target: str, mode: str, chip: str | None = None,
                      backend: str | None = None) -> str:
    """What the `lower` stage proved for this target, mode and (once the judge has read it from
    the module) GPU kernel backend (docs/evaluator.md)."""
    chip = chip or default_chip("", target)
    if mode == "device":
        return (f"compiled and run on the {target.upper()} ({chip}; the full {target} compiler "
                "ran)")
    return f"{_interpret_fidelity(target, chip, backend)}; {INTERPRET_RESIDUAL_RISK}"


def _interpret_fidelity(target: str, chip: str, backend: str | None = None) -> str:
    """What cross-lowering on this host proved for ``target`` on ``chip``."""
    if target == "tpu":
        return (f"cross-lowered to Mosaic MLIR for {chip}, plus the VMEM budget at every size "
                "(a count within 1/32 over the limit is a warning: real runs there went both "
                "ways); Mosaic's layout passes and the TPU compiler did not run (jaxlib has no "
                "TPU passes without libtpu)")
    sm = f"sm_{capability(chip_or_default(chip, 'gpu'))}"
    compiled = (f"; Triton's compiler ran for {sm} on this CPU (see triton_compile)"
                if triton_enabled() else "; Triton's GPU compiler did not run (no `triton` package)")
    triton = (f"cross-lowered to Triton IR for CUDA, judged for {chip} ({sm}): Triton's rules "
              "(power-of-two tensors of at most 2^20 elements, masked edges, shared memory) at "
              f"every size and the grid race rule{compiled}")
    mosaic = (f"cross-lowered to Mosaic GPU for CUDA, judged for {chip} ({sm}): the chip's "
              "features checked (Mosaic GPU needs wgmma and TMA: Hopper or newer); Triton's "
              "rules, the grid race rule and a shared-memory budget do not apply to Mosaic GPU "
              "kernels, and Mosaic GPU's own compiler (its passes and ptxas) did not run on "
              "this CPU")
    kinds = set((backend or "triton").split("+"))
    if kinds == {"mosaic_gpu"}:
        return mosaic
    if "mosaic_gpu" in kinds:
        return f"Triton kernels: {triton}. Mosaic GPU kernels: {mosaic}"
    return triton


def triton_enabled() -> bool:
    """Whether GPU kernels are compiled by Triton on this CPU host: the `triton` package is
    installed and JAXBENCH_TRITON_COMPILE is not 0."""
    from jaxbench.evaluator.judge import triton_compile

    return triton_compile.enabled()


def _warn_uncertain_smem(result: dict[str, Any], figures: Any) -> None:
    """A warning per kernel and size whose shared memory the judge's estimate puts over the
    chip's limit while what Triton surely needs fits (``smem_uncertain``, from
    :mod:`jaxbench.evaluator.judge.triton_rules`), where Triton's own compiler did not decide."""
    for f in figures if isinstance(figures, list) else []:
        if not (isinstance(f, dict) and f.get("smem_uncertain")):
            continue
        limit = int(f.get("shared_limit_bytes") or 0)
        where = f" ({f['smem_where']})" if isinstance(f.get("smem_where"), str) and \
            f["smem_where"] else ""
        result.setdefault("smem_uncertain", []).append(
            {k: f.get(k) for k in ("kernel", "size", "dot_shared_bytes_estimate",
                                   "dot_shared_bytes_lower_bound", "shared_limit_bytes")})
        result.setdefault("warnings", []).append((
            f"smem_uncertain: pallas_call #{f.get('kernel')} at size {f.get('size')!r}: its "
            f"dots' operands need an estimated "
            f"{int(f.get('dot_shared_bytes_estimate') or 0) / 1024:.0f} KiB of shared memory, "
            f"over the chip's {limit / 1024:.0f} KiB, but Triton surely needs only "
            f"{int(f.get('dot_shared_bytes_lower_bound') or 0) / 1024:.0f} KiB{where}: "
            "accepted; Triton's compiler, which decides, did not run here (the `triton` extra, "
            "pip install -e '.[triton]', with JAXBENCH_TRITON_COMPILE not 0), and the chip may "
            "refuse it")[:600])


def _triton_compile(result: dict[str, Any], kernels: list[dict[str, Any]] | str | None,
                    chip: str) -> bool:
    """Compiles for the chip's compute capability (sm_80 on an A100), where Triton is
    installed, the Triton kernels the trusted runner read (and verified) from the module it
    runs (interpret mode on a host without a GPU); a compiler error or a shared-memory need
    over the chip's limit is a `compile_error`. True when Triton's compiler checked every
    kernel (its shared memory then decided)."""
    from jaxbench.evaluator.judge import triton_compile

    if isinstance(kernels, str):
        result["triton_compile"] = f"skipped: {kernels}"[:300]
        return False
    if not kernels or not triton_enabled():
        return False
    try:
        report = triton_compile.compile_all(kernels, capability(chip_or_default(chip, "gpu")))
    except triton_compile.TritonUnusable as exc:  # the environment's fault: no verdict from it
        result["triton_compile"] = f"skipped: {exc}"[:300]
        result.setdefault("warnings", []).append(
            f"Triton's compiler did not check this kernel: {exc} (an environment problem, not "
            "the kernel's: see `jaxbench doctor`; reinstall with pip install -e '.[triton]', or "
            "set JAXBENCH_TRITON_COMPILE=0)"[:600])
        result["lowering_fidelity"] += "; Triton's compiler was unusable here and did not run"
        return False
    except Exception as exc:  # noqa: BLE001 - the compiler process crashed or hung on this IR
        raise StageFailure("compile_error", "lower",
                           f"Triton's compiler failed on the kernel's IR: {exc}"[:2000]) from None
    result["triton_compile"] = {k: report[k] for k in ("triton_version", "capability", "kernels",
                                                       "not_checked")}
    if report["not_checked"]:
        names = ", ".join(report["not_checked"])
        result.setdefault("warnings", []).append(
            f"Triton {report['triton_version']} cannot parse the Triton IR this jaxlib emits for "
            f"kernel {names} (the dialects differ): Triton's compiler did not check it; a limit "
            "of the check, not the kernel's fault (jaxlib's own verifier accepted the IR)"
            + (f". {skew}" if (skew := triton_compile.skew(triton_compile.jaxlib_version(),
                                                            report["triton_version"])) else ""))
        result["lowering_fidelity"] += (f"; Triton's compiler could not parse the IR of {names} "
                                        "(jaxlib/Triton skew) and did not check it")
    for fault in report.get("tool_faults") or []:  # Triton's own crashes: not the kernel's
        result.setdefault("warnings", []).append(f"tool fault: {fault['text']}; Triton's "
                                                 "compiler did not check it"[:600])
        result.setdefault("tool_faults", []).append(
            {k: str(fault.get(k, ""))[:300] for k in ("tool", "error", "frame", "version")})
    if report["problem"]:
        raise StageFailure("compile_error", "lower", report["problem"][:2000])
    return not report["not_checked"] and not report.get("tool_faults")


def _require_chip_features(backend: Any, chip: str) -> None:
    """Pallas' Mosaic GPU backend emits Hopper instructions (wgmma, TMA, clusters): a kernel of
    it (``kernel_backend``, read by the judge from the module's kernel calls) cannot run on an
    older GPU, such as the A100 PallasBench is defined for."""
    entry = chip_or_default(chip, "gpu")
    missing = sorted(MOSAIC_GPU_FEATURES - entry.features)
    if backend and "mosaic_gpu" in str(backend) and missing:
        raise StageFailure(
            "compile_error", "lower",
            f"a Mosaic GPU kernel, judged for {chip} (sm_{capability(entry)}, no "
            f"{' or '.join(missing)}): Pallas' Mosaic GPU backend needs "
            "a Hopper (sm_90) or newer GPU. Write it for Pallas' Triton backend (pallas_call with "
            "compiler_params=jax.experimental.pallas.triton.CompilerParams(...)), or judge it "
            "for a Hopper chip (--chip H200)")


def job_chip(case: Case, target: str) -> str:
    """The chip a target is lowered and budgeted for: the case's for its own target."""
    if case.target == target:
        return case.chip
    return default_chip(case.task.suite, target)


def judged_chip(suite: str, target: str, mode: str, asked: str | None) -> str:
    """The device kind a kernel is judged for: in device mode the attached chip (a ``chip``
    asked for must be that one), else the one asked for, else the suite's default."""
    wanted = resolve_chip(asked, target).device_kind if asked else None
    if mode == "device":
        attached = device_kind()
        known = chip_or_default(attached, target)
        if wanted and known.device_kind != wanted and not attached.startswith(wanted):
            raise ValueError(f"--chip {asked} but the attached {target.upper()} is {attached}: "
                             "drop --chip, or judge for that chip in interpret mode (--mode "
                             "interpret)")
        return attached
    return wanted or default_chip(suite, target)


def _runner_verdict(outcome: RunnerOutcome, case: Case,
                    stages: dict[str, Any]) -> dict[str, Any]:
    if outcome.timed_out:
        done = ", ".join(f"{name} {info['seconds']:.1f} s" for name, info in stages.items()
                         if isinstance(info, dict) and isinstance(info.get("seconds"), float))
        raise StageFailure("timeout", "correct",
                           f"no verdict within {case.timeout_s:g} s (wall clock) while the "
                           "trusted runner lowered, checked and ran the kernel at size "
                           f"{case.size} (the interpreters' checks and the trials)"
                           + (f" (finished: {done})" if done else "") + "; runner killed")
    if outcome.memory_exceeded:
        raise StageFailure("crashed", "correct", f"the exported module exceeded the "
                                                 f"{case.memory_bytes / 2**30:g} GiB memory limit")
    response = outcome.response
    if response is None:
        tail = [ln for ln in outcome.log_tail.splitlines() if ln.strip()][-2:]
        raise StageFailure("crashed", "correct", "the trusted runner died running the exported "
                                                 "module" + (": " + " | ".join(tail)[-300:] if tail else ""))
    if response.get("status") != "ran":
        status = response.get("status")
        rule = response.get("rule")
        raise StageFailure(status if status in STATUSES else "crashed",
                           response.get("stage", "correct"), response.get("message", ""),
                           rule=rule if rule in RULES else None)
    return response


def evaluate(source_or_path: str | os.PathLike[str], task_id: str, **options: Any) -> dict[str, Any]:
    """Evaluates one candidate (path or source text) on one task; see :meth:`Evaluator.evaluate`."""
    secret = options.pop("secret", None)
    with Evaluator(secret=secret, spares=0) as evaluator:
        return evaluator.evaluate(source_or_path, task_id, **options)
