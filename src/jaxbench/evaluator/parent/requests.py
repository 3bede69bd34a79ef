"""What the parent asks of the untrusted tracer and of the trusted runner, and what it reads
back from the runner: the tracer's job (:func:`tracer_job`), the judge's request
(:func:`judge_request`), the runner's output streams (:func:`read_outputs`), the trials the
chip's owner decided (:func:`chip_decided`) and the judge phase's measured parts
(:func:`judge_parts`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jax

from jaxbench.contract import JudgeRequest, JudgeResponse, Rule, Stage, StageFailure, Status, TracerJob
from jaxbench.contract.records import CLEAR_PASS_MARGIN
from jaxbench.evaluator.common.arrays import MalformedOutputs, unpack
from jaxbench.evaluator.parent.case import Case, job_chip
from jaxbench.evaluator.parent.compare import Verdict, derive_keys
from jaxbench.evaluator.parent.judge_client import RunnerOutcome
from jaxbench.evaluator.parent.static import preloaded
from jaxbench.tasks import task_file_of

TIMING_CACHE_BYTES = 64 * 2**20
PLATFORM = {"tpu": "tpu", "gpu": "cuda"}
# The interpreters' runs, which look for data races as they go.
RACE_CHECKS = {
    "tpu_interpreter": "the TPU interpreter (two simulated cores, shuffled parallel grid)",
    "gpu_interpreter": "the Mosaic GPU interpreter (simulated warpgroups, barriers and TMA)",
}
# An evaluation's trial keys by purpose (derived from its secret): the trials, the recheck,
# the interpreters' probe, the untrusted side's debug run.
Keys = dict[str, list[list[int]]]


def tracer_job(case: Case, source: str, filename: str, keys: Keys) -> TracerJob:
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


def judge_request(case: Case, source: str, filename: str, keys: Keys, secret: bytes,
                  directory: Path) -> JudgeRequest:
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
                or values[2] > CLEAR_PASS_MARGIN:
            raise StageFailure(Status.CRASHED, Stage.CORRECT, f"the judge's chip verdict for "
                               f"{label!r} is malformed", rule=Rule.HARNESS)
        decided[label] = Verdict(True, "", *values)
    return decided


def judge_parts(outcome: RunnerOutcome, mode: str) -> dict[str, float]:
    """The judge phase's measured parts: the wait for a runner (on a device, for the chip's
    owner), its start (process, imports, chip open) and the runner's own spans."""
    said = (outcome.response or {}).get("spans")
    return {"chip_wait" if mode == "device" else "runner_wait": outcome.waited_s,
            "owner_start" if mode == "device" else "runner_start": outcome.start_s,
            **({k: float(v) for k, v in said.items() if isinstance(v, (int, float))}
               if isinstance(said, dict) else {})}
