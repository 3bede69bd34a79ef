"""The evaluation's schema: statuses, stages, rule codes and categories as enums, the
records that cross a process boundary, and the evaluation-result record (docs/design.md).

Every module that names a status, a stage or a rule names it from here (a test reads the
source and fails on a string spelling one elsewhere; a line whose word only looks like one,
such as the module name ``"time"``, says so with the comment ``# other meaning``). The enums
are ``StrEnum``: a member is its string, so JSON, comparisons with plain strings and old run
directories stay as they were. Every event a run writes carries ``schema``
(:data:`SCHEMA_VERSION`); events without it were written before the schema existed and are
read as version 1.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import platform
import re
import sys
import time
from enum import StrEnum
from typing import Any, ClassVar

# 1: runs written before the schema (no ``schema`` field, ``rule`` only for outside work);
# 2: every failure carries its rule code.
SCHEMA_VERSION = 2


class Status(StrEnum):
    """An evaluation's verdict (docs/design.md, "Statuses")."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    NO_PALLAS = "no_pallas"
    REJECTED = "rejected"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    UNVERIFIED = "unverified"


class Stage(StrEnum):
    """The stage an evaluation stopped at (or, for a ``correct`` one, the last it passed)."""

    STATIC = "static"
    TRACE = "trace"
    LOWER = "lower"
    CORRECT = "correct"
    TIME = "time"
    RECHECK = "recheck"


# Progress words of the processes, never a verdict: the tracer is ``running`` and ends
# ``traced``; the trusted runner's response is ``ran`` when it ran the trials.
RUNNING, TRACED, RAN = "running", "traced", "ran"

# Field names of records that are spelled like a status, stage or rule code (each means the
# field, never the verdict).
FIELD_TIME = "time"  # an event's wall-clock time (jaxbench.runs.RunDir.append)
FIELD_CORRECT = "correct"  # how many evaluations were correct (reports) / whether (exports)
FIELD_OUTSIDE_FLOPS = "outside_flops"  # the structure report's FLOPs outside the kernels
FIELD_NO_KERNEL = "no_kernel"  # usage: the model's answers that held no kernel

STATUSES = tuple(Status)
STAGES = tuple(Stage)
# Worst to best: how a group of evaluations picks its best status, and how the agents rank
# failed candidates among themselves (closer to a working kernel is better).
STATUS_RANKING = (Status.COMPILE_ERROR, Status.REJECTED, Status.NO_PALLAS, Status.CRASHED,
                  Status.TIMEOUT, Status.RUNTIME_ERROR, Status.INCORRECT, Status.UNVERIFIED,
                  Status.CORRECT)
# A sample "compiles" when it got past the static checks, tracing and lowering.
COMPILED_STAGES = frozenset({Stage.CORRECT, Stage.TIME, Stage.RECHECK})


def status_rank(status: Any) -> int:
    """The place of ``status`` in :data:`STATUS_RANKING` (higher is better); -1 if unknown."""
    return STATUS_RANKING.index(status) if status in STATUS_RANKING else -1


class Category(StrEnum):
    """The failure taxonomy's categories (the report's labels: jaxbench.report.taxonomy), in
    the order reports list them, earliest stage first."""

    STATIC_POLICY = "static_policy"
    SOURCE_ERROR = "source_error"
    TRACE_ERROR = "trace_error"
    SANDBOX_RULE = "sandbox_rule"
    NO_PALLAS = "no_pallas"
    MEMORY_BUDGET = "memory_budget"
    BLOCK_SHAPE = "block_shape"
    TRITON_RULE = "triton_rule"
    GPU_RACE = "gpu_race"
    OUTSIDE_WORK = "outside_work"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    INCORRECT = "incorrect"
    UNINITIALISED = "uninitialised_memory"
    NAN_INF = "nan_inf"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    UNVERIFIED = "unverified"
    OTHER = "other"


class Rule(StrEnum):
    """Which rule a failure broke: set where the failure is decided, carried by
    :class:`StageFailure` into the result's ``rule``. The taxonomy and the agents' feedback
    read the code, never the message (a kernel's own exception text lands in messages)."""

    # the static policy (parent/static.py)
    STATIC_POLICY = "static_policy"  # an import, builtin, attribute or statement kernels may not use
    SYNTAX_ERROR = "syntax_error"
    DEBUG_PRINT = "debug_print"  # a leftover jax.debug.print: an honest mistake, not gaming
    UNAVAILABLE_IMPORT = "unavailable_import"  # a module kernels cannot use
    PRIVATE_IMPORT = "private_import"  # an allowed library's private module that is no kernel
    NO_KERNEL_FUNCTION = "no_kernel_function"  # no top-level kernel(*inputs)
    # the untrusted side, as the tracer reports it (believed only as a failure)
    TRACE_ERROR = "trace_error"  # the kernel raised while traced
    OTHER_SIZE_TRACE_ERROR = "other_size_trace_error"  # ... while traced at another size
    SANDBOX = "sandbox"  # a guard refused an action (processes, files, threads, frames, ...)
    OS_ISOLATION = "os_isolation"  # the OS refused it (namespaces, Landlock, seccomp)
    PATCHED_HARNESS = "patched_harness"  # harness code or JAX's rule tables replaced
    HOST_CALLBACK = "callback_in_kernel"
    OWN_INTERPRET = "own_interpret"  # the kernel passes interpret= itself
    PLATFORM_DEPENDENT = "platform_dependent"  # platform-dependent code (lax.platform_dependent)
    NOT_DATA = "not_data"  # the trace holds an object that cannot be handed over as data
    SEALED = "sealed"  # candidate code acted after the tracer was sealed
    MALFORMED_OUTPUTS = "malformed_outputs"  # the untrusted side's outputs break their layout
    # the hand-over, as the judge reads it
    HANDOVER = "handover_refused"  # malformed, over a limit, or an object not on the allow-list
    OWN_CLASSES = "own_classes"  # objects of the kernel's own classes as JAX parameters
    UNKNOWN_PRIMITIVE = "unknown_primitive"  # a primitive (or lowering rule) JAX does not define
    HANDOVER_TYPES = "handover_types"  # the jaxpr's inputs or typing differ from the task's
    OTHER_CHIP = "other_chip"  # an equation lowered for another chip
    # the judge's structure rules (judge/rules.py, judge/lowering.py)
    NO_KERNEL = "no_kernel"  # no Pallas kernel call
    EXPORT_CONTRACT = "export_contract"  # the export's platform, devices, effects or inputs
    OUTPUT_TYPES = "output_types"  # the outputs' shapes or dtypes differ from the reference's
    KERNEL_REGION_NAME = "kernel_region_name"  # a function named like a kernel region
    EXPORTS_DIFFER = "exports_differ"  # the interpret and target exports differ outside kernels
    UNANALYSABLE = "unanalysable"  # the exported module cannot be analysed
    OUTSIDE_UNPRICED = "outside_unpriced"  # ops outside kernels the analysis cannot price
    OUTSIDE_FLOPS = "outside_flops"  # XLA's share of the FLOPs over the budget
    OUTSIDE_BYTES = "outside_bytes"  # XLA's share of a data-movement task's bytes over it
    OUTPUT_WITHOUT_KERNEL = "output_without_kernel"  # an output no kernel's result reaches
    # what the chip surely refuses
    VMEM_BUDGET = "vmem_budget"
    SMEM_BUDGET = "smem_budget"
    TRITON_RULE = "triton_rule"  # power-of-two tensors, 2^20 elements, masked edges, IR verifier
    BLOCK_SHAPE = "block_shape"  # Pallas refused a BlockSpec (decided by JAX's checking function)
    LOWERING = "lowering"  # JAX refused to lower the kernel (its own diagnosis)
    TRITON_COMPILE = "triton_compile_failed"  # Triton's compiler failed on the kernel's IR
    CHIP_FEATURES = "chip_features"  # the kernel needs features the chip lacks
    WRONG_TARGET = "wrong_target"  # written for the other platform
    GPU_RACE = "gpu_race"  # two GPU grid programs write the same location
    # running it
    RUNTIME = "runtime"  # the compiled kernel raised when run
    MISMATCH = "mismatch"  # outputs off the float32 truth beyond the tolerance
    NAN_INF = "nan_inf"  # outputs hold NaN or Inf where the truth does not
    UNINITIALISED = "uninitialised"  # outputs depend on memory never written
    INTERPRETER_RACE = "interpreter_race"  # the interpreter saw a race and the outputs differ
    # limits and the harness
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    DISK_LIMIT = "disk_limit"
    PROCESS_DIED = "process_died"  # a tracer or runner died
    HARNESS = "harness"  # the evaluator itself failed on the kernel
    # what nothing on this host vouches for (`unverified`)
    TOOL_FAULT = "tool_fault"  # one of JAX's tools crashed inside its own code
    GPU_RACE_UNKNOWN = "gpu_race_unknown"  # the race rule cannot decide (data-dependent stores)
    NO_INTERPRET_EXPORT = "no_interpret_export"  # no interpret-mode lowering to run here
    NO_TRUTH = "no_truth"  # the float32 truth could not be computed (the task's, not the kernel's)
    HANDOVER_UNREAD = "handover_unread"  # a class of JAX's own that the judge does not read
    KERNEL_WORK_FAULT = "kernel_work_fault"  # counting the kernels' work failed (judge/kernel_work)
    STRUCTURE_RULE_FAULT = "structure_rule_fault"  # a structure rule itself failed (judge/rules)


# Every rule's category, whatever its message says.
RULE_CATEGORY: dict[Rule, Category] = {
    Rule.STATIC_POLICY: Category.STATIC_POLICY,
    **dict.fromkeys((Rule.SYNTAX_ERROR, Rule.DEBUG_PRINT, Rule.UNAVAILABLE_IMPORT,
                     Rule.PRIVATE_IMPORT, Rule.NO_KERNEL_FUNCTION), Category.SOURCE_ERROR),
    **dict.fromkeys((Rule.TRACE_ERROR, Rule.OTHER_SIZE_TRACE_ERROR), Category.TRACE_ERROR),
    **dict.fromkeys((Rule.SANDBOX, Rule.OS_ISOLATION, Rule.PATCHED_HARNESS, Rule.HOST_CALLBACK,
                     Rule.OWN_INTERPRET, Rule.PLATFORM_DEPENDENT, Rule.SEALED,
                     Rule.MALFORMED_OUTPUTS, Rule.HANDOVER, Rule.OWN_CLASSES,
                     Rule.UNKNOWN_PRIMITIVE, Rule.HANDOVER_TYPES, Rule.OTHER_CHIP,
                     Rule.EXPORT_CONTRACT, Rule.KERNEL_REGION_NAME, Rule.EXPORTS_DIFFER,
                     Rule.UNANALYSABLE), Category.SANDBOX_RULE),
    Rule.NO_KERNEL: Category.NO_PALLAS,
    **dict.fromkeys((Rule.OUTSIDE_UNPRICED, Rule.OUTSIDE_FLOPS, Rule.OUTSIDE_BYTES,
                     Rule.OUTPUT_WITHOUT_KERNEL), Category.OUTSIDE_WORK),
    **dict.fromkeys((Rule.VMEM_BUDGET, Rule.SMEM_BUDGET), Category.MEMORY_BUDGET),
    Rule.TRITON_RULE: Category.TRITON_RULE,
    Rule.BLOCK_SHAPE: Category.BLOCK_SHAPE,
    **dict.fromkeys((Rule.LOWERING, Rule.TRITON_COMPILE, Rule.CHIP_FEATURES, Rule.WRONG_TARGET),
                    Category.COMPILE_ERROR),
    Rule.GPU_RACE: Category.GPU_RACE,
    Rule.RUNTIME: Category.RUNTIME_ERROR,
    **dict.fromkeys((Rule.MISMATCH, Rule.OUTPUT_TYPES, Rule.INTERPRETER_RACE),
                    Category.INCORRECT),
    Rule.UNINITIALISED: Category.UNINITIALISED,
    Rule.NAN_INF: Category.NAN_INF,
    Rule.TIME_LIMIT: Category.TIMEOUT,
    **dict.fromkeys((Rule.MEMORY_LIMIT, Rule.DISK_LIMIT, Rule.PROCESS_DIED, Rule.HARNESS),
                    Category.CRASHED),
    **dict.fromkeys((Rule.TOOL_FAULT, Rule.GPU_RACE_UNKNOWN, Rule.NO_INTERPRET_EXPORT,
                     Rule.NOT_DATA, Rule.NO_TRUTH, Rule.HANDOVER_UNREAD, Rule.KERNEL_WORK_FAULT,
                     Rule.STRUCTURE_RULE_FAULT), Category.UNVERIFIED),
}
RULES = frozenset(Rule)
# Rules whose refusal is policy (honest work left in XLA), not a cheat: the agents say so. Their
# status is `no_pallas` (too little of the work is Pallas), never `rejected` (gaming, escape);
# runs written before that said `rejected` with these codes (read as `no_pallas` by rewards).
POLICY_RULES = frozenset(r for r, c in RULE_CATEGORY.items() if c is Category.OUTSIDE_WORK)
POLICY_STATUS = Status.NO_PALLAS
# What the tracer may report (it ran candidate code: believed only as a failure, and only
# with one of these codes).
TRACER_RULES = frozenset({Rule.TRACE_ERROR, Rule.OTHER_SIZE_TRACE_ERROR, Rule.SANDBOX,
                          Rule.OS_ISOLATION, Rule.PATCHED_HARNESS, Rule.HOST_CALLBACK,
                          Rule.NO_KERNEL, Rule.NOT_DATA, Rule.MEMORY_LIMIT, Rule.HARNESS,
                          Rule.RUNTIME, Rule.UNKNOWN_PRIMITIVE})
assert set(RULE_CATEGORY) == RULES, sorted(RULES - set(RULE_CATEGORY))



def category_of(status: Any, stage: Any, rule: Any) -> Category | None:
    """The failure category of one evaluation (None when it is correct): its rule's, from the
    code alone. A record without a known code (written before codes, or by a forged tracer
    that the parent did not believe) is placed by its status and stage only."""
    if status == Status.CORRECT:
        return None
    if rule in RULES:
        return RULE_CATEGORY[Rule(rule)]
    if stage == Stage.STATIC and status in (Status.REJECTED, Status.COMPILE_ERROR):
        return Category.STATIC_POLICY if status == Status.REJECTED else Category.SOURCE_ERROR
    if status == Status.COMPILE_ERROR and stage == Stage.TRACE:
        return Category.TRACE_ERROR
    by_status = {Status.TIMEOUT: Category.TIMEOUT, Status.UNVERIFIED: Category.UNVERIFIED,
                 Status.NO_PALLAS: Category.NO_PALLAS, Status.COMPILE_ERROR: Category.COMPILE_ERROR,
                 Status.INCORRECT: Category.INCORRECT, Status.RUNTIME_ERROR: Category.RUNTIME_ERROR,
                 Status.CRASHED: Category.CRASHED}
    return by_status.get(status, Category.OTHER)


# Exit status of a tracer whose candidate code acted after it was sealed for its exports.
SEALED_EXIT = 86
# The chips kernels are lowered for when none is attached: JAXBench's TPU v6e, and an H200
# (the parent names the real device in device mode).
CROSS_LOWERING_TPU = "TPU v6 lite"
CROSS_LOWERING_GPU = "NVIDIA H200"
# The XLA flag for processes that only check on the host CPU (the tracers always; the trusted
# runner and the parent where JAX_PLATFORMS=cpu): compiling dominates there (input generators,
# interpret-mode modules, truths, interpreters: each compiled, then run once on small inputs),
# so LLVM's optimizations cost more than they save (measured: about a third less CPU per
# evaluation, docs/measurements.md). Numerics stay IEEE (no fast-math); never set where a
# device computes or anything is timed.
CPU_CHECK_XLA_FLAGS = "--xla_backend_optimization_level=0"


def with_cpu_check_flags(env: dict[str, str] | os._Environ[str]) -> None:
    """Adds :data:`CPU_CHECK_XLA_FLAGS` to ``env``'s XLA_FLAGS unless an optimization level
    is set there already (the user's choice stands)."""
    flags = env.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        env["XLA_FLAGS"] = f"{flags} {CPU_CHECK_XLA_FLAGS}".strip()


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why an evaluation failed: what a phase reports instead of passing."""

    status: Status
    stage: Stage
    rule: Rule | None
    message: str


class StageFailure(Exception):
    """A candidate failed a stage: carries the status, the stage it stopped at and the rule
    code that decided it (every failure the evaluator raises names one: a test reads the
    source)."""

    def __init__(self, status: Status | str, stage: Stage | str, message: str,
                 rule: Rule | str | None = None) -> None:
        super().__init__(message)
        self.status = Status(status)
        self.stage = Stage(stage)
        self.message = message
        self.rule = Rule(rule) if rule is not None else None

    @property
    def failure(self) -> Failure:
        return Failure(self.status, self.stage, self.rule, self.message)


class Finding(str):
    """A rule's finding: its text (a ``str``, as messages quote it) with the rule code that
    decided it, so a problem passed on as text keeps its code (slicing it gives plain text)."""

    rule: Rule

    def __new__(cls, text: str, rule: Rule | str) -> Finding:
        obj = super().__new__(cls, text)
        obj.rule = Rule(rule)
        return obj


@dataclasses.dataclass(frozen=True)
class Settings:
    """One evaluation's options, the same object from the CLI (or any caller) through the run's
    executor to :meth:`jaxbench.evaluator.Evaluator.evaluate` (docs/design.md, "Settings").
    ``None`` means the default that depends on the kernel or the task (its declared TARGET,
    the task's measured time limit, the suite's chip)."""

    target: str | None = None
    mode: str = "auto"
    size: str = "small"
    trials: int = 3
    timeout_s: float | None = None
    memory_gb: float = 8.0
    tpu_interpret: bool = True
    max_outside_flops_fraction: float = 0.1
    timing: tuple[tuple[str, Any], ...] = ()  # device timing options, as (name, value) pairs
    save_ir: str | None = None  # a directory for the IR and analyses
    debug: bool = False
    chip: str | None = None
    # Trial keys drawn afresh for this evaluation (a nonce mixed with the run's secret, kept in
    # the result as ``trial_nonce``): for callers that show the verdict to whoever resubmits
    # (``serve``, ``optimize``'s agents), so nothing learnt from one verdict applies to the next.
    fresh_keys: bool = False

    def replace(self, **changes: Any) -> Settings:
        if isinstance(changes.get("timing"), dict):
            changes["timing"] = tuple(sorted(changes["timing"].items()))
        if changes.get("save_ir") is not None:
            changes["save_ir"] = str(changes["save_ir"])
        return dataclasses.replace(self, **changes)

    @classmethod
    def of(cls, **options: Any) -> Settings:
        """From keyword options (the names of the fields); an unknown name is a TypeError."""
        return cls().replace(**options)

    def timing_options(self) -> dict[str, Any]:
        return dict(self.timing)


class RecordError(ValueError):
    """A message between processes that does not fit its record."""


class Record:
    """A message that crosses a process boundary: a dataclass whose fields are its JSON keys.
    :meth:`from_dict` refuses unknown keys, missing required ones and values of another type
    (``TYPES`` names the checked fields), so a field read but never written cannot exist."""

    TYPES: ClassVar[dict[str, tuple[type, ...]]] = {}

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise RecordError(f"{cls.__name__}: not an object")
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise RecordError(f"{cls.__name__}: unknown field(s) {unknown[:5]}")
        missing = [name for name, f in fields.items() if name not in data
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise RecordError(f"{cls.__name__}: missing field(s) {missing}")
        for name, types in cls.TYPES.items():
            if name in data and data[name] is not None and not isinstance(data[name], types):
                raise RecordError(f"{cls.__name__}.{name}: {type(data[name]).__name__}, not "
                                  f"{'/'.join(t.__name__ for t in types)}")
        return cls(**data)


@dataclasses.dataclass
class TracerJob(Record):
    """Parent -> tracer (stdin): what to trace. The tracer also answers the chip's questions
    as the judged chip of its target (``tpu_device_kind`` / ``gpu_device_kind``)."""

    source: str
    filename: str
    task: str
    size: str
    target: str
    platform: str
    mode: str
    specs: list[Any]
    size_specs: dict[str, Any]
    memory_bytes: int
    file_bytes: int = 1 << 30
    debug: bool = False
    tpu_device_kind: str = ""
    gpu_device_kind: str = ""
    fallback_keys: list[Any] = dataclasses.field(default_factory=list)  # the debug run's inputs
    schema: int = SCHEMA_VERSION


@dataclasses.dataclass
class TracerStatus(Record):
    """Tracer -> parent (status.json, written by the process that ran candidate code): its
    progress, its timings and, where it failed, why. Believed only as a failure."""

    status: str = RUNNING  # running, traced, or a failure Status
    stage: str | None = None
    message: str = ""
    rule: str | None = None
    stages: dict[str, Any] = dataclasses.field(default_factory=dict)
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    isolation: str | None = None
    frames: list[Any] = dataclasses.field(default_factory=list)
    probe: list[Any] | None = None
    schema: int = SCHEMA_VERSION
    TYPES: ClassVar[dict[str, tuple[type, ...]]] = {
        "status": (str,), "stage": (str,), "message": (str,), "rule": (str,), "stages": (dict,),
        "info": (dict,), "isolation": (str,), "frames": (list,), "probe": (list,),
        "schema": (int,)}


@dataclasses.dataclass
class JudgeRequest(Record):
    """Parent -> trusted runner (one JSON line): judge the hand-over in ``dir``."""

    dir: str
    task: str
    size: str
    platform: str
    target: str
    mode: str
    trial_keys: list[Any]
    recheck_keys: list[Any]
    task_file: Any = None  # (path, sha256) of a task of the user's own
    source: str = ""  # for the lines messages name (never run)
    filename: str = "<kernel>"
    tokamax: bool = False
    tpu_interpreter_key: Any = None
    gpu_interpreter_key: Any = None
    chip: dict[str, str] = dataclasses.field(default_factory=dict)
    max_outside_flops_fraction: float = 0.1
    timing: dict[str, Any] = dataclasses.field(default_factory=dict)
    save_ir: bool = False
    timing_keys: list[Any] = dataclasses.field(default_factory=list)
    time: bool = True  # time the kernel (device mode)
    lease: bool = False  # the runner asks the parent's device lease before timing
    schema: int = SCHEMA_VERSION


@dataclasses.dataclass
class JudgeResponse(Record):
    """Trusted runner -> parent (one JSON line): the verdict of the judge's checks (``ran`` when
    it ran the trials) with what the parent derives figures from."""

    status: str = RAN  # ran, or a failure Status
    stage: str | None = None
    message: str = ""
    rule: str | None = None
    stages: dict[str, Any] = dataclasses.field(default_factory=dict)
    budget_problem: str = ""  # the first budget a kernel breaks at some size
    budget_rule: str | None = None
    trials: list[Any] = dataclasses.field(default_factory=list)  # outputs.npy's layout
    truth: list[Any] = dataclasses.field(default_factory=list)  # truth.npy's layout
    timing: dict[str, Any] | None = None
    memory: list[Any] | None = None
    smem_uncertain: list[Any] = dataclasses.field(default_factory=list)
    tool_faults: list[Any] = dataclasses.field(default_factory=list)
    structure: dict[str, Any] | None = None
    kernel_backend: str | None = None
    triton_kernels: Any = None
    tpu_interpreter_race: bool = False
    gpu_interpreter_race: bool = False
    gpu_interpreter: str | None = None
    compile_s: float | None = None
    device_kind: str | None = None
    backend: str | None = None
    jaxpr: str | None = None
    stablehlo: str | None = None
    kernel_ir: Any = None
    compiled_artifacts: dict[str, Any] | None = None
    tpu_interpreter: str | None = None  # why the TPU interpreter did not run, where it did not
    retire: bool = False  # the runner reset the TPU interpreter: replace it, never reuse it
    spans: dict[str, Any] = dataclasses.field(default_factory=dict)  # where its time went (s)
    fits: dict[str, Any] | None = None  # device mode: what fits the chip (judge/fitting.py)
    # device mode: the trials compared on the chip (judge/chip_verdict.py), label -> figures
    verdicts: dict[str, Any] = dataclasses.field(default_factory=dict)
    schema: int = SCHEMA_VERSION


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def short_error(exc: BaseException, limit: int = 600) -> str:
    """The useful part of an exception: its type and the first lines of its message."""
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in text:
        # An error raised inside a host callback (the interpreters run kernels that way):
        # the embedded traceback's last exception line is the real cause.
        causes = [ln.strip() for ln in lines if re.match(r"\s*[\w.]+(Error|Exception)\b", ln)]
        if causes:
            lines = [causes[-1]]
    # JAX appends long tracebacks-in-messages; the head says what went wrong.
    head = " | ".join(lines[:4]) if lines else ""
    msg = f"{type(exc).__name__}: {head}" if head else type(exc).__name__
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def versions() -> dict[str, Any]:
    """Software and host versions; the worker adds the device it ran on."""
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "host": platform.node(),
        "machine": platform.machine(),
    }
    try:
        import jax
        import jaxlib

        info["jax"] = jax.__version__
        info["jaxlib"] = jaxlib.__version__
    except ImportError:  # pragma: no cover - jax is a dependency
        pass
    from jaxbench._version import __version__

    info["jaxbench"] = __version__
    return info


def new_result(task: str, target: str, mode: str, size: str, source: str) -> dict[str, Any]:
    """A result record with every contract field present (filled in as stages run)."""
    return {
        "type": "evaluation",
        "schema": SCHEMA_VERSION,
        "task": task,
        "target": target,
        "mode": mode,
        "size": size,
        "status": None,
        "stage": None,
        "rule": None,
        "message": "",
        "max_abs_err": None,
        "rel_err": None,
        "t_ref_ms": None,
        "t_kernel_ms": None,
        "speedup": None,
        "compile_s": None,
        "source_sha256": source_sha256(source),
        "stages": {},
        "versions": versions(),
        "started_at": time.time(),
    }
