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
import enum
import hashlib
import re
import types
import typing
from typing import Any, Literal, NotRequired, TypedDict

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
    # device mode (``task_programs``): the seconds the owner took to compile the task's
    # reference, truth and input drawing for its chip, when it compiled them
    reference_s: float
    truth_s: float
    drawing_s: float


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
    trace_retried_because: NotRequired[str]  # a round whose trace lost calls, taken again
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


# A clear pass on the chip: every element within 99 % of its tolerance. The device owner
# decides a trial there only below it (judge/chip_verdict.py); the parent takes a chip verdict
# only below it (evaluator/parent/requests.py).
CLEAR_PASS_MARGIN = 0.99


class ChipVerdict(TypedDict):
    """Device mode: a trial that clearly passed on the chip, by its figures and its key
    (``JudgeResponse.verdicts``, by trial label)."""

    max_abs_err: float
    rel_err: float
    tol_fraction: float
    key: NotRequired[list[int]]  # the trial's key (the parent reads only the figures)


class KernelFigures(TypedDict, total=False):
    """One kernel's on-chip memory figures at one size: an entry of ``JudgeResponse.memory``
    (and, where Triton's shared memory is unsure, of its ``smem_uncertain``), which the judge's
    memory rules and budgets fill (:mod:`jaxbench.evaluator.judge.memory_rules`). The estimate
    from the jaxpr and the count on the lowered module each fill the keys of their platform."""

    kernel: int | None  # the pallas_call's index (None: a kernel outside the kernel regions)
    size: str
    # TPU (Mosaic): the VMEM the kernel needs and its limit
    vmem_bytes: int
    vmem_limit_bytes: int
    vmem_uncertain: bool  # just over the limit, inside the margin: the parent warns
    name: str  # the kernel function's (the lowered module's)
    grid: list[int] | str  # the lowered kernel's grid, or "dynamic"
    # GPU
    backend: str  # "mosaic_gpu": a kernel whose budget is not counted
    block_bytes: int  # the program's blocks (the estimate)
    num_warps: int
    num_stages: int
    largest_tensor_elements: int
    # Triton's shared memory
    dot_shared_bytes_estimate: int
    dot_shared_bytes_lower_bound: int
    smem_uncertain: bool  # between the two figures: Triton's compiler decides, or a warning
    shared_limit_bytes: int
    smem_where: str


class ToolFaultRecord(TypedDict, total=False):
    """One of JAX's tools crashing inside its own code (``JudgeResponse.tool_faults``: the keys
    of :meth:`jaxbench.evaluator.judge.tool_faults.ToolFault.as_dict`): the tool, its error,
    the frame it failed in, its version, the known issue it matches and the text shown."""

    tool: str
    error: str
    frame: str
    version: str
    known: str
    text: str


class TracerHints(TypedDict, total=False):
    """``TracerStatus.info``: hints for the message only."""

    in_kernel: bool  # a trace error raised in kernel(*inputs), not while the file loaded


class RecordError(ValueError):
    """A message between processes that does not fit its record."""


def _type_name(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__name__
    return re.sub(r"\b(typing|jaxbench\.contract\.\w+)\.", "", str(hint))


def type_problem(value: Any, hint: Any) -> str | None:
    """Why ``value`` (as JSON gives it) is not of type ``hint``; None when it is. Knows ``Any``,
    str/int/float/bool (a bool is no int; an int is a float), the enums of
    :mod:`jaxbench.contract.codes` (one of their values), ``Literal``, unions (``X | None``),
    ``list[X]``, ``dict[str, X]``, ``tuple[...]`` (a list or a tuple) and TypedDicts (their
    declared keys; a required one must be there, others may be)."""
    if hint is Any:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        problems = [type_problem(value, arg) for arg in args if value is None
                    or arg is not type(None)]
        if None in problems:
            return None
        if len(problems) == 1:  # X | None, and not None: why not an X
            return problems[0]
        return f"{type(value).__name__} {_short(value)}, not {_type_name(hint)}"
    if origin is typing.Literal:
        if any(type(value) is type(arg) and value == arg for arg in args):
            return None
        return f"{_short(value)}, not one of {list(args)}"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if isinstance(value, str) and value in hint._value2member_map_:
            return None
        return f"{_short(value)}, not one of {hint.__name__}'s values"
    if typing.is_typeddict(hint):
        return _typeddict_problem(value, hint)
    if hint is type(None):
        ok = value is None
    elif hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint in (str, bool):
        ok = isinstance(value, hint)
    elif origin is list:
        if not isinstance(value, list):
            return f"{type(value).__name__}, not a list"
        return _first((f"[{i}]", item, args[0]) for i, item in enumerate(value))
    elif origin is dict:
        if not isinstance(value, dict):
            return f"{type(value).__name__}, not an object"
        key, item = args
        return (_first((f"key {k!r}", k, key) for k in value)
                or _first((f"[{k!r}]", v, item) for k, v in value.items()))
    elif origin is tuple:
        if not isinstance(value, (list, tuple)):
            return f"{type(value).__name__}, not a list"
        if len(args) == 2 and args[1] is Ellipsis:
            return _first((f"[{i}]", item, args[0]) for i, item in enumerate(value))
        if len(value) != len(args):
            return f"{len(value)} items, not {len(args)}"
        return _first((f"[{i}]", item, arg) for i, (item, arg) in enumerate(zip(value, args, strict=True)))
    else:
        raise TypeError(f"no check for the type {hint!r}")  # a record declared one: add it here
    return None if ok else f"{type(value).__name__} {_short(value)}, not {_type_name(hint)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first(checks: Any) -> str | None:
    """The first problem among ``(place, value, type)`` checks, named by its place."""
    for place, value, hint in checks:
        problem = type_problem(value, hint)
        if problem is not None:
            return f"{place}: {problem}"
    return None


def _typeddict_problem(value: Any, hint: Any) -> str | None:
    # named in words (a ChipVerdict is "chip verdict"), as messages speak of it
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", hint.__name__).lower()
    if not isinstance(value, dict):
        return f"{type(value).__name__} {_short(value)}, not a {words}"
    for name, (key_type, required) in _keys(hint).items():
        if name not in value:
            if required:
                return f"a {words} without its key {name!r}"
            continue
        problem = type_problem(value[name], key_type)
        if problem is not None:
            return f"{words} {name!r}: {problem}"
    return None


_HINTS: dict[Any, dict[str, Any]] = {}


def _keys(typed: Any) -> dict[str, tuple[Any, bool]]:
    """A TypedDict's keys: name -> (type, required), ``NotRequired``/``Required`` read from its
    hints (the class's own required keys miss them under ``from __future__ import
    annotations``)."""
    if typed not in _HINTS:
        found = {}
        for name, hint in typing.get_type_hints(typed, include_extras=True).items():
            required = typed.__total__
            if typing.get_origin(hint) in (typing.NotRequired, typing.Required):
                required = typing.get_origin(hint) is typing.Required
                hint = typing.get_args(hint)[0]
            found[name] = (hint, required)
        _HINTS[typed] = found
    return _HINTS[typed]


class Record:
    """A message that crosses a process boundary: a dataclass whose fields are its JSON keys.
    :meth:`from_dict` refuses unknown keys, missing required ones and any value not of its
    field's declared type (:func:`type_problem`, from the dataclass's type hints), so a field
    read but never written cannot exist and a field's reader can trust its type."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def field_types(cls) -> dict[str, Any]:
        """Each field's declared type (resolved once, when this module is imported: a sealed
        process compiles nothing later)."""
        if cls not in _HINTS:
            names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
            _HINTS[cls] = {name: hint for name, hint in typing.get_type_hints(cls).items()
                           if name in names}
        return _HINTS[cls]

    @classmethod
    def field_problem(cls, name: str, value: Any) -> str | None:
        """Why ``value`` cannot be field ``name`` of this record; None when it can."""
        hint = cls.field_types().get(name)
        if hint is None:
            return "unknown field"
        return type_problem(value, hint)

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise RecordError(f"{cls.__name__}: not an object")
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        missing = [name for name, f in fields.items() if name not in data
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise RecordError(f"{cls.__name__}: missing field(s) {missing}")
        for name, value in data.items():
            problem = cls.field_problem(name, value)
            if problem is not None:
                raise RecordError(f"{cls.__name__}.{name}: {problem}")
        return cls(**data)


Spec = tuple[list[int], str]  # an input's (shape, dtype name)
Key = list[int]  # a trial's PRNG key data


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
    specs: list[Spec]
    size_specs: dict[str, list[Spec]]  # size -> its input specs, as ``specs``
    memory_bytes: int | None  # the address-space cap (None: none)
    file_bytes: int = 1 << 30
    debug: bool = False
    tpu_device_kind: str = ""
    gpu_device_kind: str = ""
    fallback_keys: list[Key] = dataclasses.field(default_factory=list)  # the debug run's inputs
    schema: int = SCHEMA_VERSION


@dataclasses.dataclass
class TracerStatus(Record):
    """Tracer -> parent (status.json, written by the process that ran candidate code): its
    progress, its timings and, where it failed, why. Believed only as a failure."""

    status: Status | Literal["running", "traced"] = RUNNING  # or a failure Status
    stage: Stage | None = None
    message: str = ""
    rule: Rule | None = None
    stages: dict[str, StageDetails] = dataclasses.field(default_factory=dict)
    info: TracerHints = dataclasses.field(default_factory=lambda: TracerHints())
    isolation: str | None = None
    frames: list[str] = dataclasses.field(default_factory=list)
    probe: list[dict[str, Any]] | None = None  # probe.npy's layout (a debug run's outputs)
    schema: int = SCHEMA_VERSION


@dataclasses.dataclass
class JudgeRequest(Record):
    """Parent -> trusted runner (one JSON line): judge the hand-over in ``dir``."""

    dir: str
    task: str
    size: str
    platform: str
    target: str
    mode: str
    trial_keys: list[Key]
    recheck_keys: list[Key]
    task_file: tuple[str, str] | None = None  # (path, sha256) of a task of the user's own
    source: str = ""  # for the lines messages name (never run)
    filename: str = "<kernel>"
    tokamax: bool = False
    tpu_interpreter_key: Key | None = None
    gpu_interpreter_key: Key | None = None
    chip: dict[str, str] = dataclasses.field(default_factory=dict)
    max_outside_flops_fraction: float = 0.1
    timing: dict[str, float] = dataclasses.field(default_factory=dict)  # the timers' options
    save_ir: bool = False
    timing_keys: list[Key] = dataclasses.field(default_factory=list)
    time: bool = True  # time the kernel (device mode)
    lease: bool = False  # the runner asks the parent's device lease before timing
    xla_cache: bool = True  # the runner's compile cache for the task's programs (xla_cache.py)
    schema: int = SCHEMA_VERSION


@dataclasses.dataclass
class JudgeResponse(Record):
    """Trusted runner -> parent (one JSON line): the verdict of the judge's checks (``ran`` when
    it ran the trials) with what the parent derives figures from."""

    status: Status | Literal["ran"] = RAN  # ran, or a failure Status
    stage: Stage | None = None
    message: str = ""
    rule: Rule | None = None
    stages: dict[str, StageDetails] = dataclasses.field(default_factory=dict)
    budget_problem: str = ""  # the first budget a kernel breaks at some size
    budget_rule: Rule | None = None
    # outputs.npy's and truth.npy's layouts (checked whole where they are read: arrays.unpack)
    trials: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    truth: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    timing: TimingSamples | None = None
    memory: list[KernelFigures] | None = None
    smem_uncertain: list[KernelFigures] = dataclasses.field(default_factory=list)
    tool_faults: list[ToolFaultRecord] = dataclasses.field(default_factory=list)
    structure: StructureFigures | None = None
    kernel_backend: str | None = None
    # the Triton kernels the runner read from the module (each its name, IR and size, as
    # judge/gpu/triton_compile.py reads them), or why they could not be read
    triton_kernels: list[dict[str, Any]] | str | None = None
    tpu_interpreter_race: bool = False
    gpu_interpreter_race: bool = False
    gpu_interpreter: str | None = None
    compile_s: float | None = None
    device_kind: str | None = None
    backend: str | None = None
    jaxpr: str | None = None
    stablehlo: str | None = None
    kernel_ir: str | None = None
    compiled_artifacts: dict[str, str | dict[str, float]] | None = None  # name -> text or figures
    tpu_interpreter: str | None = None  # why the TPU interpreter did not run, where it did not
    retire: bool = False  # the runner reset the TPU interpreter: replace it, never reuse it
    spans: dict[str, float] = dataclasses.field(default_factory=dict)  # where its time went (s)
    fits: ChipFits | None = None  # device mode: what fits the chip (judge/fitting.py)
    # device mode: the trials compared on the chip (judge/chip_verdict.py), label -> figures
    verdicts: dict[str, ChipVerdict] = dataclasses.field(default_factory=dict)
    schema: int = SCHEMA_VERSION


def _resolve(hint: Any) -> None:
    """Resolves now the hints of every TypedDict inside ``hint``."""
    for arg in typing.get_args(hint):
        _resolve(arg)
    if typing.is_typeddict(hint):
        for key_type, _ in _keys(hint).values():
            _resolve(key_type)


# Every record's field types, resolved now: a sealed tracer compiles nothing after its seal.
for _record in (TracerJob, TracerStatus, JudgeRequest, JudgeResponse):
    for _hint in _record.field_types().values():
        _resolve(_hint)
del _record, _hint


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()
