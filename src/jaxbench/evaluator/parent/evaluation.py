"""One evaluation, as the parent walks it: named phases, each ending in a report.

:class:`Evaluation` is made per :meth:`jaxbench.evaluator.Evaluator.evaluate` call; the
evaluator keeps what outlives it (the tracer pool, the trusted runners, the truths, the
device lease). The phases, in order (:data:`jaxbench.evaluator.parent.verdict.PHASES`):

``policy``  the static policy on the source (parsing only);
``untrusted`` a fresh isolated tracer traces the kernel at every size and hands the jaxprs
            over; of what it leaves, only its failures and its death are believed;
``judge``   a trusted runner reads the hand-over, lowers it, applies every rule, runs the
            trials (and times them on a device); its response, and the first memory budget
            the kernel breaks at some size;
``chip``    the chip's features and Triton's compiler for the chip (where installed);
``vouch``   what vouches for the outputs: the judge's own run of the exported module, or, where
            none could run here, nothing (``unverified``);
``compare`` the outputs against the float32 truth;
``figures`` the figures from the judge's timings (device mode).

A phase that fails ends the walk; :func:`jaxbench.evaluator.parent.verdict.decide` then turns
the reports into the verdict, and the result record is finished from it.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import jax

from jaxbench.backends.host import versions
from jaxbench.backends.peaks import peak_for, roofline_fraction
from jaxbench.contract import (
    RULES,
    STAGES,
    Failure,
    JudgeRequest,
    JudgeResponse,
    Rule,
    Stage,
    StageFailure,
    Status,
    TracerJob,
)
from jaxbench.contract.result import EvaluationResult
from jaxbench.evaluator.common.arrays import MalformedOutputs, unpack
from jaxbench.evaluator.judge import chip_verdict
from jaxbench.evaluator.parent import chip_checks
from jaxbench.evaluator.parent.case import Case, job_chip
from jaxbench.evaluator.parent.compare import Verdict, check_outputs, derive_keys
from jaxbench.evaluator.parent.figures import summarize
from jaxbench.evaluator.parent.judge_client import ran, read_response
from jaxbench.evaluator.parent.pool import remove_tree
from jaxbench.evaluator.parent.result_fields import ResultFields
from jaxbench.evaluator.parent.static import MISMATCH_HINT, check_source, parses, preloaded, wrong_target_hint
from jaxbench.evaluator.parent.untrusted import (
    HANDOVER,
    HANDOVER_STEP,
    MAX_HANDOVER_BYTES,
    keep_untrusted_text,
    next_stage,
    printable_result,
    read_file,
    read_probe,
    read_untrusted_status,
    untrusted_verdict,
)
from jaxbench.evaluator.parent.verdict import PHASES, Reports, decide
from jaxbench.tasks import task_file_of

TIMING_CACHE_BYTES = 64 * 2**20
SPEEDUP_REVIEW_THRESHOLD = 10.0
PLATFORM = {"tpu": "tpu", "gpu": "cuda"}
# The interpreters' runs, which look for data races as they go.
RACE_CHECKS = {
    "tpu_interpreter": "the TPU interpreter (two simulated cores, shuffled parallel grid)",
    "gpu_interpreter": "the Mosaic GPU interpreter (simulated warpgroups, barriers and TMA)",
}


class Evaluation:
    """One candidate through the phases; :meth:`run` returns the :class:`EvaluationResult`.
    While it walks, ``self.result`` holds the result's fields as they are found (the phases'
    scratch, never seen outside); the result is built from them once, at the end."""

    def __init__(self, evaluator: Any, case: Case, source: str, filename: str) -> None:
        """``evaluator``: the :class:`~jaxbench.evaluator.parent.evaluator.Evaluator` whose
        pools, runners, truths and secret this evaluation uses."""
        self.evaluator, self.case = evaluator, case
        self.source, self.filename = source, filename
        self.keys = self._derive_keys()
        self.result = start_fields(case, source, filename, self.nonce)
        self.failures: dict[str, Failure] = {}
        self.budget: Failure | None = None
        # carried between phases
        self.handover: bytes | None = None
        self.probe: dict[str, list[Any]] = {}
        self.response: JudgeResponse | None = None  # the trusted runner's, once it ran
        self.outputs: dict[str, list[Any]] = {}
        self.truths: dict[str, list[Any]] = {}
        self.judged: list[tuple[str, list[int]]] = []
        self.started = 0.0  # when run() began (monotonic)
        self.phase_seconds: dict[str, float] = {}
        self.parts: dict[str, dict[str, float]] = {}  # each phase's measured parts

    def _derive_keys(self) -> dict[str, list[list[int]]]:
        task, size, case = self.case.task, self.case.size, self.case
        self.nonce, self.secret, self.truth = evaluation_inputs(self.evaluator,
                                                                case.settings.fresh_keys)
        return {purpose: derive_keys(self.secret, task.id, size, n, purpose)
                for purpose, n in (("trial", case.trials), (Stage.RECHECK, 1), ("probe", 1),
                                   ("untrusted", case.trials))}

    # -- the walk -------------------------------------------------------------------------------
    def run(self) -> EvaluationResult:
        self.started = time.monotonic()
        phases = (*PHASES[:2], "debug") if self.case.debug else PHASES
        for phase in phases:
            begun = time.monotonic()
            try:
                getattr(self, f"phase_{phase}")()
            except (KeyboardInterrupt, SystemExit):
                raise
            except StageFailure as failure:
                self.failures[phase] = failure.failure
            except BaseException as exc:  # noqa: BLE001 - the run goes on: a verdict, not a bug
                done = next(reversed(self.result["stages"]), None)
                self.failures[phase] = Failure(
                    Status.CRASHED, Stage(next_stage(done)) if done else Stage.STATIC,
                    Rule.HARNESS, f"the evaluator failed on this kernel: {type(exc).__name__}: "
                                  f"{str(exc)[:300]}")
            finally:
                self.phase_seconds[phase] = time.monotonic() - begun
            if phase in self.failures or (phase == "judge" and self.budget is not None):
                break
        self._finish()
        return EvaluationResult(**printable_result(self.result))

    def _finish(self) -> None:
        result = self.result
        hint = wrong_target_hint(self.source, self.case.target) if any(
            f.status in (Status.COMPILE_ERROR, Status.UNVERIFIED) for f in
            [*self.failures.values(), *([self.budget] if self.budget else [])]) else ""
        last = Stage.CORRECT if self.case.debug else next(reversed(result["stages"]), Stage.CORRECT)
        frames = result.get("candidate_frames")
        reports = Reports(failures=dict(self.failures), budget=self.budget,
                          last_stage=Stage(last) if last in STAGES else Stage.CORRECT,
                          target_hint=hint, other_platform=hint.startswith(MISMATCH_HINT),
                          frame=frames[-1] if frames else "")
        verdict = decide(reports)
        if verdict.status == Status.CORRECT:
            if (result["speedup"] or 0) > SPEEDUP_REVIEW_THRESHOLD:
                result["review"] = (f"speedup {result['speedup']:.1f}x exceeds "
                                    f"{SPEEDUP_REVIEW_THRESHOLD:g}x: check the kernel by hand")
        result.update({"status": verdict.status, "stage": verdict.stage, "rule": verdict.rule,
                       "message": verdict.message})
        take_fits(result, self.response.fits if self.response else None, verdict.status)
        result["wall_s"] = round(time.monotonic() - self.started, 3)
        result["spans"] = spans_of(self.phase_seconds, self.parts, result["wall_s"])

    # -- static ---------------------------------------------------------------------------------
    def phase_policy(self) -> None:
        check_source(self.source, self.filename, debug=self.case.debug)
        self.result["stages"][Stage.STATIC] = {"seconds": round(time.monotonic() - self.started, 4)}

    # -- trace: the untrusted side --------------------------------------------------------------
    def phase_untrusted(self) -> None:
        case, evaluator = self.case, self.evaluator
        if case.mode == "interpret":  # the truth is computed here while the others work
            if not case.debug:  # and the trusted runner warms up (on a device the chip's
                evaluator.runners.prestart()  # owner is started once and kept warm)
            evaluator.prefetch_truth(case.task, case.size, [] if self.nonce else  # see truth
                                     self.keys["trial"] + self.keys["probe"])
        job = tracer_job(case, self.source, self.filename, self.keys)
        outcome = evaluator.pool_for(case.debug).run(job.to_dict(), case.timeout_s,
                                                     case.memory_bytes)
        # What the parent set up and saw before any candidate code ran, never the tracer's word.
        self.result["isolation"] = getattr(outcome, "isolation", None) or "unknown"
        self.result["sealed"] = getattr(outcome, "sealed", None) or "none"  # other meaning: a field
        # (a tracer that sent no handshake ran no candidate code: nothing to warn of)
        sealed = self.result["sealed"]  # other meaning: the result field
        if sealed == "none" and not self.result["isolation"].startswith("unknown"):
            self.result.setdefault("warnings", []).append(
                "unsealed: nothing kept the kernel's process from this host's files (no seccomp "
                "seal, no Landlock: `jaxbench doctor` says why), so this verdict could be forged")
        try:
            status = read_untrusted_status(outcome.dir)
            stages = status.get("stages")
            if isinstance(stages, dict):  # its timings, shown only
                self.result["stages"].update({k: {"seconds": stages[k]["seconds"]} for k in (
                    Stage.TRACE, HANDOVER_STEP) if isinstance(stages.get(k), dict) and isinstance(
                        stages[k].get("seconds"), (int, float))})
            self.parts["untrusted"] = {
                k: self.result["stages"][k]["seconds"] for k in (Stage.TRACE, HANDOVER_STEP)
                if k in self.result["stages"]}
            keep_untrusted_text(self.result, status, outcome, case)
            untrusted_verdict(status, outcome, case)
            # an empty file: opened before the seal, never written
            self.handover = read_file(outcome.dir / HANDOVER, MAX_HANDOVER_BYTES) or None
            self.probe = read_probe(outcome.dir, status) if case.debug else {}
        finally:
            remove_tree(outcome.dir)
        if not case.debug and self.handover is None:
            raise StageFailure(Status.CRASHED, Stage.LOWER, "the untrusted side handed over no "
                               "traced jaxpr (or one over the size limit)", rule=Rule.PROCESS_DIED)

    # -- debug: the untrusted side's own run (never counts) ---------------------------------------
    def phase_debug(self) -> None:
        """A debug run's outputs (untrusted, like everything else from there) against the truth:
        shown to help, marked, never a verdict that counts."""
        result = self.result
        result["judged_on"] = "untrusted_debug_run"
        result.setdefault("warnings", []).append(
            "debug run: jax.debug.print was allowed and the kernel ran on the untrusted side, "
            "without the trusted judge; this verdict does not count (rerun without --debug)")
        judged = [(f"untrusted{i}", k) for i, k in enumerate(self.keys["untrusted"][:1])]
        missing = [label for label, _ in judged if label not in self.probe]
        if missing:
            raise StageFailure(Status.CRASHED, Stage.CORRECT,
                               f"the debug run returned no outputs for {missing}", rule=Rule.HARNESS)
        self.compare(self.probe, judged, False, {})
        result["trials"] = len(judged)

    # -- judge: the trusted side ----------------------------------------------------------------
    def phase_judge(self) -> None:
        case = self.case
        directory = Path(tempfile.mkdtemp(prefix="jaxbench-judge-"))
        try:
            assert self.handover is not None
            (directory / HANDOVER).write_bytes(self.handover)
            request = judge_request(self.case, self.source, self.filename, self.keys,
                                    self.secret, directory)
            outcome = self.evaluator.run_judge(request.to_dict(), case)
            self.parts["judge"] = judge_parts(outcome, case.mode)
            # The budgets: the judge's estimate from the jaxpr (it names the kernel's line) or
            # its count on the lowered modules, whichever found a problem first.
            said = read_response(outcome, case, self.result["stages"])
            if said.budget_problem:
                rule = Rule(said.budget_rule) if said.budget_rule in RULES else Rule.VMEM_BUDGET
                # a budget the judge could not compute: it cannot know, so `unverified`
                self.budget = Failure(Status.UNVERIFIED if rule == Rule.TOOL_FAULT
                                      else Status.COMPILE_ERROR, Stage.LOWER, rule,
                                      said.budget_problem[:2000])
            try:
                self.response = ran(said)
            except StageFailure as failure:
                if failure.status == Status.INCORRECT and failure.stage == Stage.CORRECT:
                    self.result["judged_on"] = "trusted_export"  # the judge ran it: wrong
                raise
            if self.budget is None:
                self.outputs, self.truths = read_outputs(directory, request, self.response,
                                                         self.case)
        finally:
            remove_tree(directory)

    # -- chip: what the chip surely refuses ------------------------------------------------------
    def phase_chip(self) -> None:
        case, result, response = self.case, self.result, self.response
        if case.target == "gpu":
            result["kernel_backend"] = response.kernel_backend
            result["lowering_fidelity"] = chip_checks.lowering_fidelity(
                case.target, case.mode, case.chip, result["kernel_backend"])
            chip_checks.require_chip_features(result["kernel_backend"], case.chip)
        if case.target == "gpu" and case.mode == "interpret":
            decided = chip_checks.triton_compile_step(result, response.triton_kernels,
                                                      case.chip)
            if not decided:  # shared memory the estimate cannot decide: a warning
                chip_checks.warn_uncertain_smem(result, response.smem_uncertain)
        take_response(result, response, case)

    # -- vouch: what ran the kernel here ---------------------------------------------------------
    def phase_vouch(self) -> None:
        case, result, response, keys = self.case, self.result, self.response, self.keys
        error = result["stages"].get(Stage.LOWER, {}).get("interpret_export_error")
        if case.mode == "device" or not error:
            result["judged_on"] = "trusted_export"
            judged = [(label, key) for label, key in zip(
                [f"trial{i}" for i in range(case.trials)], keys["trial"], strict=True)]
            self.outputs.update(chip_decided(response, case))
            judged += [(f"recheck{i}", k) for i, k in enumerate(keys[Stage.RECHECK])
                       if case.mode == "device" and f"recheck{i}" in self.outputs]
            missing = [label for label, _ in judged if label not in self.outputs]
            if missing:
                raise StageFailure(Status.CRASHED, Stage.CORRECT,
                                   f"the judge returned no outputs for {missing}", rule=Rule.HARNESS)
            if "tpu_interpreter" in self.outputs:
                judged.append(("tpu_interpreter", keys["probe"][0]))
            self.judged = judged
            return
        # nothing the judge could run vouches for the outputs: never `correct`
        said = response.gpu_interpreter
        seen = ""
        if "gpu_interpreter" in self.outputs:  # it can find the kernel wrong, no more
            self.compare({"gpu_interpreter": self.outputs["gpu_interpreter"]},
                         [("gpu_interpreter", keys["probe"][0])],
                         response.gpu_interpreter_race, {})
            seen = ("; JAX's Mosaic GPU interpreter ran it and its outputs matched the "
                    "truth, which cannot make it `correct`")
        elif isinstance(said, str):
            seen = f"; JAX's Mosaic GPU interpreter: {said}"
        raise StageFailure(Status.UNVERIFIED, Stage.CORRECT, (
            "the kernel has no exportable interpret-mode lowering, so the judge cannot run "
            "it on this CPU and nothing vouches for its outputs (it passed every check up "
            "to lowering; evaluate it on the chip with --mode device): "
            f"{error}{seen}")[:2000], rule=Rule.NO_INTERPRET_EXPORT)

    # -- compare: the outputs against the float32 truth ------------------------------------------
    def compare(self, outputs: dict[str, list[Any]], judged: list[tuple[str, list[int]]],
                raced: bool, truths: dict[str, list[Any]]) -> None:
        truth = TimedTruth(self.truth, self.parts.setdefault("compare", {}))
        compare_outputs(self.result, self.case, truth, outputs, judged, raced, truths)

    def phase_compare(self) -> None:
        self.compare(self.outputs, self.judged, self.response.tpu_interpreter_race,
                     self.truths)

    # -- time: the figures -----------------------------------------------------------------------
    def phase_figures(self) -> None:
        take_figures(self.result, self.response, self.case)


def start_fields(case: Case, source: str, filename: str, nonce: str | None) -> ResultFields:
    """An evaluation's scratch before any phase: the fields of a result with no verdict yet
    (:meth:`EvaluationResult.start`) and what the case fixes."""
    start = EvaluationResult.start(case.task.id, case.target, case.mode, case.size,
                                   source, versions=versions())
    # the event's keys other than type and schema are the result's fields
    result = cast(ResultFields, {name: value for name, value in start.to_event().items()
                                 if name not in ("type", "schema")})
    result.update({
        "kernel_file": filename, "judged_on": None, "isolation": None,
        "sealed": None,  # other meaning: the result field
        "kernel_backend": None,
        "timing_method": "wall_clock_interleaved" if case.mode == "device" else None,
        "chip": case.chip,
        "lowering_fidelity": chip_checks.lowering_fidelity(case.target, case.mode, case.chip)})
    result["timeout_s"] = case.timeout_s
    if nonce:
        result["trial_nonce"] = nonce
    if case.debug:
        result["debug"] = True
    if case.assumed_target and parses(source):
        result["warnings"] = [f'the kernel declares no TARGET: evaluated for {case.target} '
                              f'(add TARGET = "tpu" or "gpu" to the file, or pass --target)']
    return result


def take_figures(result: ResultFields, response: JudgeResponse, case: Case) -> None:
    """The figures from the judge's timing samples (device mode), computed here."""
    task, size = case.task, case.size
    if response.timing:
        try:
            figures = summarize(response.timing)
        except ValueError as exc:
            raise StageFailure(Status.CRASHED, Stage.TIME, str(exc), rule=Rule.HARNESS) from None
        result["stages"].setdefault(Stage.TIME, {}).update(figures)
        for field in ("t_ref_ms", "t_kernel_ms", "speedup", "timing_method"):
            result[field] = figures[field]
        kind = result.get("device_kind", "")
        result["roofline_fraction"] = roofline_fraction(
            task.flops(size), task.bytes(size), result["t_kernel_ms"] / 1e3, kind)
        result["peak_flops"], result["peak_bytes_per_s"] = peak_for(kind) or (None, None)
    result["trials"] = case.trials


def judge_parts(outcome: Any, mode: str) -> dict[str, float]:
    """The judge phase's measured parts: the wait for a runner (on a device, for the chip's
    owner), its start (process, imports, chip open) and the runner's own spans."""
    said = (outcome.response or {}).get("spans")
    return {"chip_wait" if mode == "device" else "runner_wait": outcome.waited_s,
            "owner_start" if mode == "device" else "runner_start": outcome.start_s,
            **({k: float(v) for k, v in said.items() if isinstance(v, (int, float))}
               if isinstance(said, dict) else {})}


class TimedTruth:
    """The parent's float32 truth (interpret mode), its seconds (computing, or waiting for the
    prefetch) added to ``parts["truth"]``."""

    def __init__(self, truth: Any, parts: dict[str, float]) -> None:
        self.truth, self.parts = truth, parts

    def __call__(self, task: Any, size: str, key: list[int]) -> list[Any]:
        begun = time.monotonic()
        try:
            return self.truth(task, size, key)
        finally:
            self.parts["truth"] = self.parts.get("truth", 0.0) + time.monotonic() - begun


def take_fits(result: ResultFields, fits: dict[str, Any] | None, status: Status) -> None:
    """What fitted the chip (device mode): recorded; a `correct` kernel whose reference was not
    timed carries the reason as its message."""
    if isinstance(fits, dict):
        result["fits"] = fits
        if fits.get("reason") and status == Status.CORRECT:
            result["message"] = fits["reason"]


# Each phase's unmeasured rest: what it is.
PHASE_REST = {"policy": Stage.STATIC, "untrusted": "tracer_io", "judge": "judge_io",
              "chip": "chip_checks", "vouch": "vouch", "compare": "compare",
              "figures": "figures", "debug": "debug_compare"}


def spans_of(phase_seconds: dict[str, float], parts: dict[str, dict[str, float]],
             wall_s: float) -> dict[str, float]:
    """Where an evaluation's wall went: each phase's measured parts (the tracer's trace and
    hand-over; the runner's or chip owner's own spans, the wait for it and its start; the
    float32 truth here), each phase's rest under its name (:data:`PHASE_REST`: process
    start-up and transfers for the tracer and the judge), and ``other``, the wall outside
    every phase. Seconds, rounded to milliseconds."""
    spans: dict[str, float] = {}
    for phase, seconds in phase_seconds.items():
        measured = {k: v for k, v in parts.get(phase, {}).items() if v > 0}
        for name, value in measured.items():
            spans[name] = spans.get(name, 0.0) + value
        rest = seconds - sum(measured.values())
        if rest > 0:
            name = PHASE_REST.get(phase, phase)
            spans[name] = spans.get(name, 0.0) + rest
    spans["other"] = max(0.0, wall_s - sum(phase_seconds.values()))
    return {k: round(v, 3) for k, v in spans.items()}


def evaluation_inputs(evaluator: Any, fresh: bool) -> tuple[str | None, bytes, Any]:
    """(nonce, secret, truth): what an evaluation's keys derive from and what computes their
    float32 truths. (None, the run's secret, the evaluator's cached truths), or with ``fresh``
    (``Settings.fresh_keys``) a nonce drawn for this evaluation alone, in hex,
    :func:`nonce_secret` of the run's secret and it, and :class:`FreshTruth` (keys never seen
    again: caching their truths would keep every evaluation's in a long service). The result
    records the nonce (``trial_nonce``): with the secret a run reveals when it ends, anyone
    re-derives the keys; without it, nobody."""
    if not fresh:
        return None, evaluator.secret, evaluator.truth
    nonce = secrets.token_hex(16)
    return nonce, nonce_secret(evaluator.secret, nonce), FreshTruth(evaluator.truth)


def nonce_secret(secret: bytes, nonce: str) -> bytes:
    """``sha256("jaxbench-trial-nonce|" secret "|" nonce)``: the secret of one evaluation."""
    return hashlib.sha256(b"jaxbench-trial-nonce|" + secret + b"|" + nonce.encode()).digest()


class FreshTruth:
    """The float32 truths of one evaluation's fresh keys: computed by the evaluator's ground
    truth (``of_inputs``, its compiled references) on the inputs of each key, held by this
    evaluation only (not prefetched, not in the evaluator's cache)."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared

    def __call__(self, task: Any, size: str, key: list[int]) -> list[Any]:
        return self.shared.uncached(task, size, key)


def tracer_job(case: Case, source: str, filename: str,
               keys: dict[str, list[list[int]]]) -> TracerJob:
    """What the tracer is asked to do (abstract shapes only, never inputs)."""
    task, size = case.task, case.size
    return TracerJob(
        source=source, filename=filename, task=task.id, size=size,
        target=case.target, platform=PLATFORM[case.target], mode=case.mode,
        specs=[[list(s.shape), str(s.dtype)] for s in task.input_specs(size)],
        size_specs={name: [[list(s.shape), str(s.dtype)] for s in task.input_specs(name)]
                    for name in task.inputs},
        debug=case.debug, memory_bytes=case.memory_bytes,
        # the chip it is judged for (the attached one in device mode): its identity while
        # traced (the judge lowers for it)
        tpu_device_kind=case.chip if case.target == "tpu" else "",
        gpu_device_kind=case.chip if case.target == "gpu" else "",
        # the debug run's inputs (it runs on the untrusted side and never counts)
        fallback_keys=keys["untrusted"][:1] if case.debug else [])


def judge_request(case: Case, source: str, filename: str, keys: dict[str, list[list[int]]],
                  secret: bytes, directory: Path) -> JudgeRequest:
    """What the trusted runner is asked to do with the hand-over in ``directory``."""
    task, size = case.task, case.size
    interpret = case.mode == "interpret"
    request = JudgeRequest(
        dir=str(directory), task=task.id, task_file=task_file_of(task.id), size=size,
        platform=PLATFORM[case.target], target=case.target, mode=case.mode,
        source=source, filename=filename,
        tokamax=any(name.split(".")[0] == "tokamax" for name in preloaded(source)),
        tpu_interpreter_key=keys["probe"][0] if (
            interpret and case.target == "tpu" and case.tpu_interpret) else None,
        gpu_interpreter_key=keys["probe"][0] if (interpret and case.target == "gpu") else None,
        chip={"tpu": job_chip(case, "tpu"), "gpu": job_chip(case, "gpu")},
        trial_keys=keys["trial"], recheck_keys=keys[Stage.RECHECK],
        max_outside_flops_fraction=case.max_outside_fraction,
        timing=case.timing, save_ir=case.save_ir is not None,
        xla_cache=case.settings.xla_cache)
    if case.mode == "device":
        per_set = max(sum(s.nbytes for s in task.input_specs(size)), 1)
        sets = min(16, max(3, -(-TIMING_CACHE_BYTES // per_set)))
        request.timing_keys = derive_keys(secret, task.id, size, sets - 1,
                                          "timing")
    return request


def read_outputs(directory: Path, request: JudgeRequest, response: JudgeResponse,
             case: Case) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """(outputs, truths): the trusted runner's streams, capped by what the outputs can take (4
    bytes an element covers float32 truths), with room for the .npy headers."""
    task, size = case.task, case.size
    outputs: dict[str, list[Any]] = {}
    truths: dict[str, list[Any]] = {}
    runs = len(request.trial_keys) + len(request.recheck_keys) + 1
    cap = runs * (4 * sum(math.prod(x.shape) for x in jax.tree_util.tree_leaves(
        task.output_shapes(size))) + (1 << 16))
    try:
        if response.trials:
            outputs = unpack((directory / "outputs.npy").read_bytes(), response.trials,
                                  cap)
        if response.truth:
            truths = unpack((directory / "truth.npy").read_bytes(), response.truth, cap)
    except (MalformedOutputs, OSError) as exc:
        raise StageFailure(Status.CRASHED, Stage.CORRECT, f"judge output unreadable: {exc}",
                           rule=Rule.HARNESS) from None
    return outputs, truths


def chip_decided(response: JudgeResponse, case: Case) -> dict[str, Verdict]:
    """The trials the device owner compared on the chip and found clearly passing: label ->
    their figures as a passing verdict. Only in device mode; a malformed entry is the
    harness's fault (`crashed`), never a pass."""
    said = response.verdicts
    if not said:
        return {}
    if case.mode != "device" or not isinstance(said, dict):
        raise StageFailure(Status.CRASHED, Stage.CORRECT, "the judge sent chip verdicts "
                           "outside device mode", rule=Rule.HARNESS)
    decided = {}
    for label, figures in said.items():
        try:
            values = [float(figures[k]) for k in ("max_abs_err", "rel_err", "tol_fraction")]
        except (KeyError, TypeError, ValueError):
            values = []
        if len(values) != 3 or not all(math.isfinite(v) and v >= 0 for v in values) \
                or values[2] > chip_verdict.MARGIN:
            raise StageFailure(Status.CRASHED, Stage.CORRECT, f"the judge's chip verdict for "
                               f"{label!r} is malformed", rule=Rule.HARNESS)
        decided[label] = Verdict(True, "", *values)
    return decided


def take_response(result: ResultFields, response: JudgeResponse, case: Case) -> None:
    """Into the result: the judge's stages, memory figures, structure, artifacts and the
    warnings its response carries."""
    result["stages"].update(response.stages)
    if isinstance(response.memory, list):
        result["stages"].setdefault(Stage.LOWER, {})["memory"] = response.memory[:64]
        chip_checks.warn_uncertain_vmem(result, response.memory)
    for field in ("compile_s", "device_kind", "backend", "kernel_backend"):
        if getattr(response, field) is not None:
            result[field] = getattr(response, field)
    result["structure"] = response.structure
    if case.save_ir is not None:
        save_artifacts(result, response, Path(case.save_ir))
    for label in RACE_CHECKS:
        said = getattr(response, label)
        if isinstance(said, str):
            result["stages"].setdefault(Stage.CORRECT, {})[label] = said[:300]
    chip_checks.warn_tool_faults(result, response.tool_faults)


def compare_outputs(result: ResultFields, case: Case, truth: Any,
                outputs: dict[str, list[Any]], judged: list[tuple[str, list[int]]],
                raced: bool, truths: dict[str, list[Any]]) -> None:
    """Each judged output against the float32 truth: the runner's on a device (computed there
    at full float32 precision), else ``truth(task, size, key)``, this process's on the CPU."""
    task, size = case.task, case.size
    expected = task.output_shapes(size)
    worst_abs, worst_rel, worst_fraction = 0.0, 0.0, 0.0
    result["tolerance"] = {"atol": task.atol, "rtol": task.rtol}
    for label, key in judged:
        if isinstance(outputs[label], Verdict):  # compared on the chip (judge/chip_verdict.py)
            verdict = outputs[label]
        else:
            expected_truth = truths[label] if label in truths else truth(task, size, key)
            verdict = check_outputs(outputs[label], expected, expected_truth, task.atol,
                                    task.rtol)
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
            stage = Stage.RECHECK if label.startswith(Stage.RECHECK) else Stage.CORRECT
            where = "" if label.startswith(("trial", Stage.RECHECK)) else f" ({label})"
            rule = getattr(verdict, "rule", None) or Rule.MISMATCH
            if probe_run and raced:
                where += (f"; {RACE_CHECKS[label]} detected a data race: the result "
                          "depends on execution order")
                rule = Rule.INTERPRETER_RACE
            raise StageFailure(Status.INCORRECT, stage, f"{verdict.message}{where}", rule=rule)
        if probe_run and raced:
            result.setdefault("warnings", []).append(
                f"{RACE_CHECKS[label]} detected a data race, but the outputs are correct "
                "(e.g. outputs used as scratch and discarded)")


def save_artifacts(result: ResultFields, response: JudgeResponse, directory: Path) -> None:
    from jaxbench.evaluator.common.artifacts import write_artifacts

    # the jaxpr the judge read and lowered, and its kernels' IR as the judge lowered them
    data = {"jaxpr": response.jaxpr, "kernel_ir": response.kernel_ir}
    data.update(response.compiled_artifacts or {})
    data["stablehlo"] = response.stablehlo  # the module the judge checked and ran
    data["structure"] = response.structure
    extra = {k: result.get(k) for k in ("compile_s", "t_ref_ms", "t_kernel_ms", "speedup",
                                         "roofline_fraction", "peak_flops", "peak_bytes_per_s")}
    result["artifacts"] = {"dir": str(directory), "files": write_artifacts(data, directory, extra)}

