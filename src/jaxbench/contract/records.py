"""What crosses a process or package boundary: a phase's :class:`Failure`, the
:class:`StageFailure` that raises one, a rule's :class:`Finding`, one evaluation's
:class:`Settings`, the typed :class:`Record` messages between the evaluator's processes
(:class:`TracerJob`, :class:`TracerStatus`, :class:`JudgeRequest`, :class:`JudgeResponse`) and
the shapes of what their fields hold (:class:`StageDetails`, :class:`TimingSamples`,
:class:`StructureFigures`, :class:`ChipFits`, :class:`ChipVerdict`). The evaluation's result
is :class:`jaxbench.contract.result.EvaluationResult`.

Every event a run writes carries ``schema`` (:data:`SCHEMA_VERSION`); events without it were
written before the schema existed and are read as version 1.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, ClassVar, NotRequired, TypedDict

from jaxbench.contract.codes import RAN, RUNNING, Mode, Rule, Stage, Status, Target

# 1: runs written before the schema (no ``schema`` field, ``rule`` only for outside work);
# 2: every failure carries its rule code.
SCHEMA_VERSION = 2


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

    target: Target | None = None
    mode: Mode = Mode.AUTO
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
    # The trusted runner keeps XLA's compiles of the task's own programs (reference, truth,
    # input drawing) on disk (evaluator/judge/xla_cache.py); ``--no-cache``: it does not.
    xla_cache: bool = True

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes``; a mode or target of another name is a ValueError."""
        for name, kind in (("mode", Mode), ("target", Target)):
            if changes.get(name) is not None:
                try:
                    changes[name] = kind(changes[name])
                except ValueError:
                    raise ValueError(f"unknown {name} {changes[name]!r}; use "
                                     f"{', '.join(kind)}") from None
        if isinstance(changes.get("timing"), dict):
            changes["timing"] = tuple(sorted(changes["timing"].items()))
        if changes.get("save_ir") is not None:
            changes["save_ir"] = str(changes["save_ir"])
        return dataclasses.replace(self, **changes)

    @classmethod
    def of(cls, **options: Any) -> Settings:
        """From keyword options (the names of the fields); an unknown name is a TypeError."""
        return cls().replace(**options)

    def timing_options(self) -> dict[str, float]:
        return dict(self.timing)


class StageDetails(TypedDict, total=False):
    """One entry of a record's ``stages`` (a stage or a step, by name): its seconds, with the
    notes some add."""

    seconds: float
    bytes: int  # the tracer's hand-over: its size
    lease_wait_s: float  # the judge's timing: how long it waited for the device lease
    hits: int  # the judge's compile cache (judge/xla_cache.py): programs read back from it
    misses: int  # ... and compiled (then written to it)
    interpret_export_error: str  # the judge's lowering: why no interpret-mode module exists
    gpu_race_rule: str  # the judge's trials: the GPU race rule, decided on their inputs


class DeviceSamples(TypedDict, total=False):
    """The device's own times of the timed calls (``TimingSamples.device``): the per-call
    seconds of each side, the events counted and where they came from; or only ``error``, why
    the trace gave no device time for every call."""

    ref_s: list[float]
    kernel_s: list[float]
    events: int
    source: str
    error: str


class TimingSamples(TypedDict):
    """The judge's raw timing samples (``JudgeResponse.timing``; the parent computes the
    figures): the per-repetition wall-clock seconds of the reference and of the kernel, the
    input sets they rotated through, the warm-up rounds and, where the device timed them too,
    its samples."""

    ref_s: list[float]
    kernel_s: list[float]
    input_sets: int
    warmup_rounds: int
    device: NotRequired[DeviceSamples]
    # the adaptive timing (judge/timing.py, time_adaptive): how the reference's samples were
    # got ("measured" beside the kernel, "reused" from an earlier candidate of the same task
    # and size on this chip, "remeasured"), why it was remeasured, the reference's check
    # calls on this candidate's inputs, why it stopped (interval, reps, seconds), its rounds
    reference: NotRequired[str]
    remeasured_because: NotRequired[str]
    reference_check_s: NotRequired[list[float]]
    stopped: NotRequired[str]
    rounds: NotRequired[int]


class StructureFigures(TypedDict, total=False):
    """What the structure rules counted in the target module (``JudgeResponse.structure``):
    the kernel calls, the custom calls by target, the work outside the kernels (FLOPs by op,
    bytes) against the kernels' own and the task's, and the outside shares where the kernels'
    work was counted."""

    kernel_calls: int
    outside_flops: float
    task_flops: float
    outside_ops: dict[str, float]  # op name -> its FLOPs outside the kernels
    custom_calls: dict[str, int]  # custom call target -> its calls
    work: str  # the task's currency: "flops" or "bytes"
    kernel_flops: float
    outside_bytes: float
    kernel_bytes: float
    outside_share: float
    outside_bytes_share: float
    kernel_work_counted_on: str  # on the first trial's integer inputs, or the trace alone


class ChipFits(TypedDict):
    """Device mode: what fits the chip at the size judged (``JudgeResponse.fits``): whether the
    reference is timed (and why not), the bytes it needs and the chip has, where the float32
    truth is computed."""

    reference: bool
    reference_bytes: int | None
    available_bytes: int | None
    reason: str  # why the reference is not timed ("" when it is)
    truth_on: str  # "chip", "chip, in slices of B=2", "host CPU"


class ChipVerdict(TypedDict):
    """Device mode: a trial that clearly passed on the chip, by its figures and its key
    (``JudgeResponse.verdicts``, by trial label)."""

    max_abs_err: float
    rel_err: float
    tol_fraction: float
    key: list[int]


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
    size_specs: dict[str, list[Any]]  # size -> its input specs, as ``specs``
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
    stages: dict[str, StageDetails] = dataclasses.field(default_factory=dict)
    # hints for the message only: today ``in_kernel`` (a trace error raised in kernel(*inputs))
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
    timing: dict[str, float] = dataclasses.field(default_factory=dict)  # the timers' options
    save_ir: bool = False
    timing_keys: list[Any] = dataclasses.field(default_factory=list)
    time: bool = True  # time the kernel (device mode)
    lease: bool = False  # the runner asks the parent's device lease before timing
    xla_cache: bool = True  # the runner's compile cache for the task's programs (xla_cache.py)
    schema: int = SCHEMA_VERSION


@dataclasses.dataclass
class JudgeResponse(Record):
    """Trusted runner -> parent (one JSON line): the verdict of the judge's checks (``ran`` when
    it ran the trials) with what the parent derives figures from."""

    status: str = RAN  # ran, or a failure Status
    stage: str | None = None
    message: str = ""
    rule: str | None = None
    stages: dict[str, StageDetails] = dataclasses.field(default_factory=dict)
    budget_problem: str = ""  # the first budget a kernel breaks at some size
    budget_rule: str | None = None
    trials: list[Any] = dataclasses.field(default_factory=list)  # outputs.npy's layout
    truth: list[Any] = dataclasses.field(default_factory=list)  # truth.npy's layout
    timing: TimingSamples | None = None
    memory: list[Any] | None = None
    smem_uncertain: list[Any] = dataclasses.field(default_factory=list)
    tool_faults: list[Any] = dataclasses.field(default_factory=list)
    structure: StructureFigures | None = None
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
    compiled_artifacts: dict[str, str | dict[str, float]] | None = None  # name -> text or figures
    tpu_interpreter: str | None = None  # why the TPU interpreter did not run, where it did not
    retire: bool = False  # the runner reset the TPU interpreter: replace it, never reuse it
    spans: dict[str, float] = dataclasses.field(default_factory=dict)  # where its time went (s)
    fits: ChipFits | None = None  # device mode: what fits the chip (judge/fitting.py)
    # device mode: the trials compared on the chip (judge/chip_verdict.py), label -> figures
    verdicts: dict[str, ChipVerdict] = dataclasses.field(default_factory=dict)
    schema: int = SCHEMA_VERSION


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()
