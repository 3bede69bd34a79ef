"""The verdict's vocabulary: statuses, stages, failure categories and rule codes as enums, with
their tables (each rule's category, the status ranking, the rules the tracer may report), the
progress words of the processes and the record fields spelled like one of them
(docs/design.md, "Statuses", "Rule codes").

Every module that names a status, a stage or a rule names it from here (a test reads the
source and fails on a string spelling one elsewhere; a line whose word only looks like one,
such as the module name ``"time"``, says so with the comment ``# other meaning``). The enums
are ``StrEnum``: a member is its string, so JSON, comparisons with plain strings and old run
directories stay as they were.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


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


class Mode(StrEnum):
    """Where an evaluation runs its trials: ``auto`` resolves to ``device`` where the target's
    chip is attached, else ``interpret`` (docs/design.md, "Modes")."""

    AUTO = "auto"
    INTERPRET = "interpret"
    DEVICE = "device"


class Target(StrEnum):
    """The hardware a kernel is written for."""

    TPU = "tpu"
    GPU = "gpu"


class SubmissionState(StrEnum):
    """A submission to ``jaxbench serve``: waiting, being evaluated, judged (``done``, whatever
    its verdict), or given up after its retries (``failed``)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


MODES = tuple(Mode)
TARGETS = tuple(Target)

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
    # the kernels' work follows values computed from floats, which the chip may round otherwise
    # than this host (device mode): counted without them it is too little
    WORK_ROUTED_BY_FLOATS = "work_routed_by_floats"


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
                     Rule.STRUCTURE_RULE_FAULT, Rule.WORK_ROUTED_BY_FLOATS), Category.UNVERIFIED),
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
                          Rule.RUNTIME, Rule.UNKNOWN_PRIMITIVE, Rule.UNAVAILABLE_IMPORT})
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
