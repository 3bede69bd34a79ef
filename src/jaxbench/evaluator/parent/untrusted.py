"""What the untrusted tracer left, read and cleaned by the parent: capped file reads that
follow no links, a JSON parser bounded in nesting, printable text, the status and probe readers,
the verdict its status and its death give, the stage it was in when it stopped, and the
untrusted phase's report made of all that (:func:`traced`).

Everything here is the parent's (trusted) code; nothing here imports candidate code or the
parent module (:mod:`jaxbench.evaluator.parent.evaluator` imports this one).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

from jaxbench.contract import STAGES, STATUSES, TRACER_RULES, Rule, Stage, StageFailure, Status, TracerStatus
from jaxbench.evaluator.common.arrays import MalformedOutputs, unpack
from jaxbench.evaluator.common.procs import SEALED_EXIT
from jaxbench.evaluator.parent.case import Case
from jaxbench.evaluator.parent.pool import TracerOutcome, remove_tree
from jaxbench.evaluator.parent.reports import Stages, Traced

# Caps on what is read back from the untrusted side.
MAX_STATUS_BYTES = 1 << 20
MAX_HANDOVER_BYTES = 64 << 20  # the judge's reader refuses more
MAX_PROBE_BYTES = 2 << 30
HANDOVER = "jaxpr.pkl"  # the traced jaxprs: the one artefact the parent passes to the judge
# The tracer's steps, as its status names them: the trace (Stage.TRACE), the other sizes, the
# hand-over.
SIZES_STEP, HANDOVER_STEP = "sizes", "handover"


def read_file(path: Path, limit: int) -> bytes | None:
    """A regular file the untrusted side wrote (no links followed), or None; capped in size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        import stat

        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)[:limit]
    finally:
        os.close(fd)


MAX_JSON_DEPTH = 32


def parse_json(raw: bytes) -> Any:
    """JSON from the untrusted side, its nesting checked before parsing (a deeply nested file
    would exhaust the parser's recursion); None when malformed or too deep."""
    depth, deepest, in_string, escaped = 0, 0, False, False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                return None
        elif byte in (0x5D, 0x7D):
            depth -= 1
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        return None


def read_untrusted_status(directory: Path) -> TracerStatus:
    """The tracer's status.json as its record (:class:`TracerStatus`): the fields of the record
    it holds that are of their declared type; anything else in it is dropped unread and its
    field left at its default. Never refused as a whole (a forged status is the tracer's word,
    believed only as a failure)."""
    status = parse_json(read_file(directory / "status.json", MAX_STATUS_BYTES) or b"{}")
    if not isinstance(status, dict):
        status = {}
    return TracerStatus.from_dict({k: v for k, v in status.items()
                                   if TracerStatus.field_problem(k, v) is None})


# Terminal control sequences (colours, cursor moves, title changes) in untrusted text.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
OUTPUT_BYTES = 2048


def printable(raw: str) -> str:
    """Text made safe to print and store: no terminal escapes, control characters shown as
    U+FFFD (newlines and tabs kept)."""
    text = _ESCAPES.sub("", raw)
    return "".join(c if c in "\n\t" or c.isprintable() else "\ufffd" for c in text)


def untrusted_text(raw: str, limit: int) -> str:
    """Text from the untrusted side made safe to print and store, at most ``limit``
    characters (its end). Never parsed."""
    return printable(raw)[-limit:]


def printable_result(value: Any) -> Any:
    """Every string in a result (its message, warnings, frames, output, stage notes) made
    printable: whatever verdict it carries, text from the kernel can reach it (an exception's
    words, a name in the kernel's jaxpr), and the result is printed and stored."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {key: printable_result(item) for key, item in value.items()}
    if isinstance(value, list):
        return [printable_result(item) for item in value]
    return value


def untrusted_texts(status: TracerStatus, outcome: TracerOutcome, case: Case
                    ) -> tuple[tuple[str, ...], str | None]:
    """(frames, output): the candidate's frames of a failure and the end of the tracer's
    stdout/stderr (the kernel's own print output, None when blank): shown to the user,
    bounded, never believed or parsed."""
    kept = tuple(untrusted_text(f, 300) for f in status.frames[:8])
    output = outcome.stderr_tail
    if output.startswith("ready\n"):  # the tracer's own start-up line
        output = output[len("ready\n"):]
    output = untrusted_text(output, 4 * OUTPUT_BYTES if case.debug else OUTPUT_BYTES).strip("\n")
    return kept, output if output.strip() else None


UNSEALED = ("unsealed: nothing kept the kernel's process from this host's files (no seccomp "
            "seal, no Landlock: `jaxbench doctor` says why), so this verdict could be forged")


def traced(outcome: TracerOutcome, case: Case, stages: Stages) -> Traced:
    """The untrusted phase's report from what the tracer left in ``outcome.dir`` (removed
    here): its timings (noted in ``stages``, shown only), its frames and output, its failures
    and death (:func:`untrusted_verdict`), the hand-over and a debug run's outputs."""
    # What the parent set up and saw before any candidate code ran, never the tracer's word
    # (a tracer that sent no handshake ran no candidate code: nothing to warn of).
    isolation = getattr(outcome, "isolation", None) or "unknown"
    sealed = getattr(outcome, "sealed", None) or "none"  # other meaning: the outcome's field
    seen = Traced(isolation=isolation, sealed=sealed, warnings=(UNSEALED,) if (
        sealed == "none" and not isolation.startswith("unknown")) else ())
    try:
        status = read_untrusted_status(outcome.dir)
        for k in (Stage.TRACE, HANDOVER_STEP):  # its timings, shown only
            seconds = status.stages.get(k, {}).get("seconds") if isinstance(
                status.stages.get(k), dict) else None
            if isinstance(seconds, (int, float)):
                stages.note(k, {"seconds": seconds})
        frames, output = untrusted_texts(status, outcome, case)
        seen = dataclasses.replace(seen, frames=frames, output=output)
        untrusted_verdict(status, outcome, case)
        # an empty file: opened before the seal, never written
        handover = read_file(outcome.dir / HANDOVER, MAX_HANDOVER_BYTES) or None
        probe = read_probe(outcome.dir, status) if case.debug else {}
    except StageFailure as failure:
        return dataclasses.replace(seen, failure=failure.failure)
    finally:
        remove_tree(outcome.dir)
    seen = dataclasses.replace(seen, handover=handover, probe=probe)
    if not case.debug and handover is None:
        return dataclasses.replace(seen, failure=StageFailure(
            Status.CRASHED, Stage.LOWER, "the untrusted side handed over no traced jaxpr (or "
            "one over the size limit)", rule=Rule.PROCESS_DIED).failure)
    return seen


def untrusted_verdict(status: TracerStatus, outcome: TracerOutcome, case: Case) -> None:
    """Failures the untrusted side reports (believed: they only hurt the candidate), and its
    death. Nothing it says can make a kernel pass: a clean exit only lets the parent take the
    hand-over to the judge, which derives every check from it."""
    stages = status.stages
    last = next(reversed(stages), Stage.STATIC) if stages else Stage.STATIC
    dir_exceeded = getattr(outcome, "dir_exceeded", "")
    if outcome.timed_out or outcome.memory_exceeded or dir_exceeded:
        stage, doing = running_stage(stages, case)
        done = ", ".join(f"{name} {info['seconds']:.1f} s" for name, info in stages.items()
                         if "seconds" in info)
        done = f" (finished: {done})" if done else ""
        if outcome.timed_out:
            raise StageFailure(Status.TIMEOUT, stage, f"no verdict within {case.timeout_s:g} s "
                               f"(wall clock), while {doing}{done}; tracer killed",
                               rule=Rule.TIME_LIMIT)
        if dir_exceeded:
            raise StageFailure(Status.CRASHED, stage, f"tracer killed: {dir_exceeded}, while "
                               f"{doing}{done}", rule=Rule.DISK_LIMIT)
        raise StageFailure(Status.CRASHED, stage, f"tracer exceeded the "
                           f"{case.memory_bytes / 2**30:g} GiB memory limit while {doing}{done}; "
                           "killed", rule=Rule.MEMORY_LIMIT)
    if outcome.returncode == SEALED_EXIT:
        raise StageFailure(Status.REJECTED, Stage.LOWER, "candidate code ran after the tracer "
                           "was sealed for its exports (a finalizer, handler or lowering hook "
                           "acting on files or imports): the exports must be the harness's alone",
                           rule=Rule.SEALED)
    claimed = status.status
    if claimed in STATUSES and claimed != Status.CORRECT:
        stage = status.stage or next_stage(last)
        message = status.message[:2000]
        # a call that does not fit, or any error raised while kernel(*inputs) was traced (a
        # kernel written for another task's inputs unpacks or indexes them wrongly): the hint
        # can only help the candidate, so the tracer's word for where it failed is enough
        if claimed == Status.COMPILE_ERROR and (
                _SIGNATURE_ERROR.search(message)
                or (stage == Stage.TRACE and status.info.get("in_kernel") is True)):
            message += f"; the task calls {call_signature(case.task, case.size)}"
        # its code is believed only among those the tracer may give (a failure either way)
        rule = status.rule
        raise StageFailure(claimed, stage, message,
                           rule=rule if rule in TRACER_RULES else None)
    if outcome.returncode != 0:
        raise StageFailure(Status.CRASHED, next_stage(last), crash_message(outcome),
                           rule=Rule.PROCESS_DIED)


# Python's words for a call that does not fit the function's parameters.
_SIGNATURE_ERROR = re.compile(r"TypeError: kernel\(\) (takes|missing|got)")


def call_signature(task: Any, size: str) -> str:
    """How the task calls the kernel, e.g. ``kernel(x: bfloat16[2,256,1024], scale:
    bfloat16[1024])``: its inputs in call order, with dtypes and shapes at ``size``."""
    inputs = ", ".join(f"{spec.name}: {spec.dtype}[{','.join(str(d) for d in spec.shape)}]"
                       for spec in task.input_specs(size))
    return f"kernel({inputs})"


def read_probe(directory: Path, status: TracerStatus) -> dict[str, list[Any]]:
    """Outputs of the untrusted runs, validated; a forged or broken stream is a rejection."""
    layout = status.probe
    if not layout:
        return {}
    data = read_file(directory / "probe.npy", MAX_PROBE_BYTES)
    try:
        return unpack(data or b"", layout)
    except MalformedOutputs as exc:
        raise StageFailure(Status.REJECTED, Stage.CORRECT, "the untrusted side's outputs do not "
                           f"match their layout ({exc})", rule=Rule.MALFORMED_OUTPUTS) from None


def running_stage(stages: dict[str, Any], case: Case) -> tuple[str, str]:
    """(stage, what the tracer was doing) when it was stopped, from the stages it reported
    finished and the order it works in: trace; the task's other sizes (reported as
    ``sizes``); the hand-over."""
    if Stage.TRACE not in stages:
        return Stage.TRACE, "starting the tracer, loading the kernel and tracing it"
    if case.debug:
        return Stage.CORRECT, f"running the debug run at size {case.size} on the untrusted side"
    if SIZES_STEP not in stages:
        return Stage.LOWER, "tracing the kernel at the task's other sizes (memory budgets)"
    return Stage.LOWER, "handing the traced jaxprs over"


def next_stage(stage: str) -> str:
    """The stage a worker was in when it died, given the last one it finished."""
    if stage not in STAGES:
        return Stage.TRACE
    return STAGES[min(STAGES.index(stage) + 1, len(STAGES) - 1)]


def crash_message(outcome: TracerOutcome) -> str:
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
