"""From the hand-over to everything the verdict rests on, in the trusted runner.

The runner never imports candidate code. It reads the tracer's jaxprs
(:mod:`jaxbench.evaluator.judge.jaxpr_reader`) and, with JAX's own primitives and lowering
rules, derives every module and every check from them:

- the jaxpr rules: the task's input and output types at every size, a kernel equation at all,
  no host callback, no ``interpret`` chosen by the kernel, no platform-dependent code;
- the GPU grid race rule and the on-chip memory estimates (named by the kernel file's line);
- the target module at every size (cross-lowered for ``tpu`` or ``cuda``) and, in interpret
  mode, the CPU interpret module, both lowered here from the same jaxpr: what is checked and
  what runs cannot be told apart by any choice of the candidate's;
- the interpreters' checks (the TPU interpreter with race detection; JAX's Mosaic GPU
  interpreter where no interpret module exists), on inputs drawn here.

Uninitialised memory (scratch, padding, outputs never written) is filled with random bits the
kernel cannot predict, not NaN: a kernel that looks for the interpreter's NaN sees ordinary
numbers. Where a kernel could read such memory without the comparison with the truth seeing it
(scratch, padded blocks, masked loads), the interpret module is lowered twice with two fills,
which must give the same outputs.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax

from jaxbench import compat
from jaxbench.contract import Finding, JudgeRequest, Rule, Stage, StageFailure, Status
from jaxbench.evaluator.common.errors import short_error
from jaxbench.evaluator.judge import exporting, tool_faults

if TYPE_CHECKING:
    from jax.export import Exported
    from jax.extend.core import ClosedJaxpr

    from jaxbench.evaluator.judge.jaxpr_reader import Handover
    from jaxbench.evaluator.judge.memory_rules import KernelFigures

PLATFORMS = {"tpu": "tpu", "gpu": "cuda"}
# The interpreters the judge runs for their checks, as a fault of theirs names them.
INTERPRETERS = {"tpu_interpreter": "the TPU interpreter",
                "gpu_interpreter": "the Mosaic GPU interpreter"}


@dataclass
class Lowered:
    """What the runner lowered from the hand-over."""

    traces: dict[str, ClosedJaxpr]  # size -> the handed-over trace
    target: dict[str, Exported] = field(default_factory=dict)  # size -> the target module
    interpret: Any = None  # the CPU interpret module (interpret mode), fill A
    interpret_b: Any = None  # the same with fill B (where the kernel could read such memory)
    interpret_error: str = ""
    kernel_ir: list[str] = field(default_factory=list)  # the kernels' own IR (``--save-ir``)
    budget_problem: str = ""  # the estimates' first problem, naming the line (a Finding)
    budget_rule: Rule | None = None  # its rule code
    smem_uncertain: list[KernelFigures] = field(default_factory=list)  # per kernel and size
    # the memory estimate's failures (it decides nothing then), as the response's tool_faults
    tool_faults: list[dict[str, str]] = field(default_factory=list)
    # the GPU race rule's reason it could not decide before any trial: the runner decides it
    # again on each trial's inputs (gpu/race.py, race_verdict), else the verdict is `unverified`
    race_unknown: str = ""
    race_trace: Any = None  # the trace the rule reads (the judged size)


def _types(specs: Any) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(int(d) for d in s.shape), str(s.dtype)) for s in specs]


def _check_types(closed: Any, task: Any, size: str, where: str) -> None:
    """The jaxpr's inputs are the task's at ``size`` (its outputs are checked on the lowered
    module, as every module's are: :func:`jaxbench.evaluator.judge.rules.check_export`)."""
    ins = [(tuple(int(d) for d in a.shape), str(a.dtype)) for a in closed.in_avals]
    want_in = _types(task.input_specs(size))
    if ins != want_in:
        raise StageFailure(Status.REJECTED, Stage.TRACE, f"{where}the traced kernel takes {ins}, "
                           f"not the task's inputs {want_in}", rule=Rule.HANDOVER_TYPES)


def well_formed(closed: Any, device_kind: str, target: str, where: str = "") -> None:
    """The jaxpr type-checks (JAX's own checker: every equation's output types are what its
    primitive gives for its inputs, so no type written into the hand-over is a lie the
    lowering would believe), and no equation asks to be lowered for another chip than the one
    judged: the judge names the chip in the contexts of the equations it lowers
    (:func:`jaxbench.compat.on_chip`), and a context that already names a device (a mesh's)
    must name this one."""
    from jax._src import core

    try:
        core.check_jaxpr(closed.jaxpr)
    except Exception as exc:  # noqa: BLE001 - JAX's checker refuses it, whatever the error
        raise StageFailure(Status.REJECTED, Stage.TRACE, f"{where}the handed-over jaxpr does not "
                           f"type-check: {short_error(exc, 300)}",
                           rule=Rule.HANDOVER_TYPES) from None
    from jaxbench.backends.chips import chip_or_default

    judged = chip_or_default(device_kind, target).device_kind  # as the tracer's ChipDevice
    for eqn in compat.walk_eqns(closed.jaxpr):
        # the trace names no chip of its own; a mesh over the chip's device names it
        kind = getattr(compat.eqn_mesh_device(eqn), "device_kind", None)
        if kind is not None and kind not in (device_kind, judged):
            raise StageFailure(Status.REJECTED, Stage.TRACE, f"{where}an equation of the "
                               f"handed-over jaxpr is lowered for {kind!r}, not for the judged "
                               f"{device_kind!r}", rule=Rule.OTHER_CHIP)


def jaxpr_problem(found: Any) -> Finding | None:
    """The first jaxpr rule that :func:`exporting.scan`'s findings break, with its code (None
    when none is)."""
    if found.callbacks:
        return Finding(f"host callback ({', '.join(sorted(set(found.callbacks)))}) in the kernel: "
                       "all work must run on the device", Rule.HOST_CALLBACK)
    if found.own_interpret:
        return Finding(f"the kernel passes interpret={found.own_interpret[0]} to pallas_call "
                       "itself: kernels never choose interpret mode, the harness does (on a "
                       "device it would time interpreter code)", Rule.OWN_INTERPRET)
    if found.platform_dependent:
        return Finding("platform-dependent code (lax.platform_dependent) in the kernel: the "
                       "module checked on the CPU and the module run on the chip would differ",
                       Rule.PLATFORM_DEPENDENT)
    return None


def jaxpr_rules(closed: Any, where: str = "", stage: Stage = Stage.TRACE) -> None:
    """The trace-level rules on one jaxpr (kernel bodies and index maps included)."""
    found = exporting.scan(closed)
    problem = jaxpr_problem(found)
    if problem is not None:
        raise StageFailure(Status.REJECTED, stage, where + problem, rule=problem.rule)
    if found.kernels == 0:
        raise StageFailure(Status.NO_PALLAS, stage, where + "no pallas_call in the traced "
                           "kernel: the hot path must be Pallas", rule=Rule.NO_KERNEL)


@contextlib.contextmanager
def known_lines(lines: dict[int, tuple[str, int]]) -> Iterator[None]:
    """Within: the equations' lines from the hand-over answer :func:`compat.user_frame`."""
    with compat.eqn_lines(lines):
        yield


# JAX's functions that check a kernel's BlockSpecs (jax/_src/pallas/, as of JAX 0.10): an
# error whose innermost JAX frame is one of them is Pallas refusing a block shape, whatever its
# text says (the text may quote the kernel's own names). (file inside the jax package, function)
BLOCK_SPEC_CHECKS = frozenset({
    ("jax/_src/pallas/core.py", "to_block_mapping"),  # rank, dynamic block shapes
    ("jax/_src/pallas/mosaic/lowering.py", "_check_block_mappings"),  # TPU: (8, 128) tiling
    ("jax/_src/pallas/mosaic_gpu/lowering.py", "_check_block_mappings"),  # Mosaic GPU
})
# Pallas' Triton lowering: a NotImplementedError or ValueError its own ``raise`` statement
# raised there is Pallas refusing what Triton cannot do (non-power-of-two blocks, ...).
TRITON_LOWERING = "jax/_src/pallas/triton/lowering.py"


def lowering_rule(exc: BaseException) -> Rule:
    """The rule code of a JAX lowering error, decided by where JAX raised it, never by its
    message: :data:`BLOCK_SPEC_CHECKS`, :data:`TRITON_LOWERING`, else ``Rule.LOWERING``."""
    frame = tool_faults.jax_frame(exc)
    if frame is None:
        return Rule.LOWERING
    shown, _line, function, statement = frame
    if (shown, function) in BLOCK_SPEC_CHECKS:
        return Rule.BLOCK_SHAPE
    raised = tool_faults.diagnosis(exc)
    if shown == TRITON_LOWERING and isinstance(raised, (NotImplementedError, ValueError)) \
            and statement.startswith("raise"):
        return Rule.TRITON_RULE
    return Rule.LOWERING


def _lowering_failure(exc: BaseException, target: str, size: str, main: str,
                      budget_problem: str) -> StageFailure:
    """The verdict on a kernel JAX refused to lower. Where the estimates found a budget problem
    first, the message starts with it and its code decides (it names the tensor and the line;
    the lowering error may not)."""
    text = str(exc)
    if "custom calls whose targets have no compatibility guarantees" in text or (
            "callback" in text.lower() and "export" in text.lower()):
        return StageFailure(Status.REJECTED, Stage.LOWER, "host callback in the kernel: it cannot "
                            "be exported, and all work must run on the device "
                            f"({short_error(exc, 200)})", rule=Rule.HOST_CALLBACK)
    hint = ""
    if target == "gpu" and "Cannot lower pallas_call on platform" in text:
        hint = ("GPU kernels must pass compiler_params=plgpu.CompilerParams(...) from "
                "jax.experimental.pallas.triton (the Triton backend); ")
    at = "" if size == main else f" at size {size!r}"
    message = f"lowering for {target}{at}: {hint}{short_error(exc)}"
    rule = lowering_rule(exc)
    if budget_problem:  # the estimate names the tensor and the line; lowering may not
        message = f"{budget_problem}; {message}"
        rule = getattr(budget_problem, "rule", rule)
    return StageFailure(Status.COMPILE_ERROR, Stage.LOWER, message, rule=rule)


def _jaxpr_checks(traces: dict[str, ClosedJaxpr], task: Any, order: list[str], target: str,
                  device_kind: str) -> None:
    """The jaxpr rules, the inputs' types and the chip named, at every size (the main one
    first, at the trace stage; the others at the lower stage)."""
    for name in order:
        where = "" if name == order[0] else f"at size {name!r}: "
        _check_types(traces[name], task, name, where)
        jaxpr_rules(traces[name], where, Stage.TRACE if name == order[0] else Stage.LOWER)
        well_formed(traces[name], device_kind, target, where)


# The memory estimate's failures decide nothing: the result warns with this.
ESTIMATE_TOOL = "the judge's memory estimate"
ESTIMATE_CONSEQUENCE = ("It decides nothing: the kernel is judged by its lowering and the "
                        "budgets of the lowered modules")


def _estimates(lowered: Lowered, order: list[str], target: str, tpu_kind: str, gpu_kind: str,
               locate: Any) -> None:
    """The on-chip memory estimates at every size, from the jaxprs: the first problem (naming
    the line) goes to ``lowered.budget_problem``. An estimate that fails decides nothing (an
    honest kernel is never refused for it) but is recorded in ``lowered.tool_faults``; a bug of
    jaxbench's own code (a missing module or name) propagates."""
    from jaxbench.evaluator.judge import memory_rules

    for name in order:
        faults: list[BaseException] = []
        try:
            problem, figures = memory_rules.check(lowered.traces[name], target, name, tpu_kind,
                                                  gpu_kind, locate, faults=faults)
        except Exception as exc:  # noqa: BLE001 - an estimate that fails decides nothing
            if tool_faults.harness_bug(exc):
                raise
            problem, figures = "", []
            faults.append(exc)
        lowered.tool_faults += [tool_faults.check_fault(exc, ESTIMATE_TOOL, ESTIMATE_CONSEQUENCE)
                                for exc in faults]
        # shared memory between what Triton surely needs and the estimate: Triton's own
        # compile decides where it runs, else the result warns
        lowered.smem_uncertain += [f for f in figures if f.get("smem_uncertain")]
        if problem:
            lowered.budget_problem = problem
            lowered.budget_rule = getattr(problem, "rule", None)
            break


def _target_modules(lowered: Lowered, task: Any, order: list[str], request: JudgeRequest,
                    platform: str, tpu_kind: str, gpu_kind: str) -> None:
    """The target module at every size into ``lowered.target`` (the kernels' IR too, with
    ``save_ir``); raises the verdict on a kernel JAX cannot lower."""
    from jaxbench.evaluator.common.artifacts import capture_kernel_ir

    size, target, mode = order[0], request.target, request.mode
    for name in order:
        specs = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in task.input_specs(name)]
        capture = name == size and request.save_ir
        try:
            with capture_kernel_ir() if capture else contextlib.nullcontext([]) as ir, \
                    tool_faults.watch():
                lowered.target[name] = exporting.export(
                    lowered.traces[name], specs, platform, interpret=platform == "cpu",
                    tpu_device_kind=tpu_kind, gpu_device_kind=gpu_kind,
                    portable=mode == "interpret", target=target)
            lowered.kernel_ir += ir
        except Exception as exc:  # noqa: BLE001 - JAX refused to lower the kernel
            fault = tool_faults.classify(exc, f"JAX's lowering for {target}")
            if fault is not None and not lowered.budget_problem:
                at = "" if name == size else f" at size {name!r}"
                raise StageFailure(Status.UNVERIFIED, Stage.LOWER, (
                    f"lowering for {target}{at}: {fault.describe()}: the judge cannot "
                    "check or run the kernel with this JAX (the chip's own lowering is "
                    "the same code)")[:2000], rule=Rule.TOOL_FAULT) from None
            raise _lowering_failure(exc, target, name, size,
                                    lowered.budget_problem) from None


def _interpret_modules(lowered: Lowered, task: Any, size: str, target: str, tpu_kind: str,
                       gpu_kind: str) -> None:
    """The CPU interpret module (twice, with two fills, where the kernel could read memory it
    never wrote); a failure is recorded in ``lowered.interpret_error`` (the parent makes the
    verdict ``unverified``)."""
    specs = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in task.input_specs(size)]
    chip = {"tpu_device_kind": tpu_kind, "gpu_device_kind": gpu_kind, "target": target}
    closed = lowered.traces[size]
    try:
        with tool_faults.watch():
            with random_fill(secrets.randbits(32)):
                lowered.interpret = exporting.export(closed, specs, "cpu", interpret=True, **chip)
            if may_read_uninitialized(closed):
                with random_fill(secrets.randbits(32)):
                    lowered.interpret_b = exporting.export(closed, specs, "cpu",
                                                           interpret=True, **chip)
    except Exception as exc:  # noqa: BLE001 - the parent makes this `unverified`
        lowered.interpret = lowered.interpret_b = None
        fault = tool_faults.classify(exc, "JAX's interpret-mode lowering")
        lowered.interpret_error = (fault.describe() if fault is not None
                                   else short_error(exc, 300))[:300]


def lower(payload: Handover, request: JudgeRequest, task: Any) -> Lowered:
    """Every rule on the jaxprs, then the modules, for one request."""
    from jaxbench.evaluator.judge.gpu import race
    from jaxbench.evaluator.judge.gpu.triton_rules import location

    size, target, mode = request.size, request.target, request.mode
    # the target's platform; "cpu" (a test's stand-in for a device) lowers the kernels as the
    # interpreter runs them, the only way Pallas lowers for the CPU
    platform = request.platform or PLATFORMS[target]
    traces = payload["traces"]
    missing = sorted(set(task.inputs) - set(traces))
    if missing:
        raise StageFailure(Status.REJECTED, Stage.TRACE, f"the hand-over has no trace at size(s) "
                           f"{missing}", rule=Rule.HANDOVER)
    order = [size] + [s for s in task.inputs if s != size]
    chip = request.chip or {}
    tpu_kind = chip.get("tpu") or exporting.CROSS_LOWERING_TPU
    gpu_kind = chip.get("gpu") or exporting.CROSS_LOWERING_GPU
    lowered = Lowered(traces={s: traces[s] for s in order})
    with known_lines(payload["lines"]):
        _jaxpr_checks(traces, task, order, target, tpu_kind if target == "tpu" else gpu_kind)
        race_unknown = ""
        if target == "gpu":
            verdict = race.race_verdict(traces[size])
            if verdict.race:
                raise StageFailure(Status.INCORRECT, Stage.LOWER, f"GPU race rule: {verdict.race}",
                                   rule=Rule.GPU_RACE)
            race_unknown = verdict.unknown  # never a race charged to the kernel: `unverified`
        locate = location(request.source, request.filename)
        _estimates(lowered, order, target, tpu_kind, gpu_kind, locate)
        _target_modules(lowered, task, order, request, platform, tpu_kind, gpu_kind)
        if mode == "interpret":
            _interpret_modules(lowered, task, size, target, tpu_kind, gpu_kind)
    if race_unknown and not lowered.budget_problem:  # (a budget problem is refused later)
        lowered.race_unknown, lowered.race_trace = race_unknown, traces[size]
    return lowered


def race_unknown_failure(reason: str) -> StageFailure:
    """The GPU race rule could not decide (before the trials, or on a trial's inputs)."""
    return StageFailure(Status.UNVERIFIED, Stage.LOWER, f"GPU race rule: {reason}",
                        rule=Rule.GPU_RACE_UNKNOWN)


def may_read_uninitialized(closed: Any) -> bool:
    """Whether a kernel of ``closed`` could read memory it never wrote in a way the trials'
    comparison with the truth can miss: scratch (``scratch_shapes``, ``run_scoped``), blocks
    padded at an array's edge, masked loads (their masked-off lanes are padding), and any kernel
    that is not a ``pallas_call``. Outputs never written need no second fill: random bits there
    fail the comparison with the truth."""
    for eqn in exporting.scan(closed).kernel_eqns:
        mapping = eqn.params.get("grid_mapping")
        if eqn.primitive.name != "pallas_call" or mapping is None:
            return True
        if getattr(mapping, "scratch_avals", ()) or getattr(mapping, "num_scratch_operands", 0):
            return True
        for block in mapping.block_mappings:
            dims = [getattr(d, "block_size", d) for d in block.block_shape]
            for size, dim in zip(block.array_aval.shape, dims, strict=False):
                if isinstance(dim, int) and dim and int(size) % dim:
                    return True
        body = eqn.params.get("jaxpr")
        body = getattr(body, "jaxpr", body)
        if body is not None and any(e.primitive.name in ("run_scoped", "load", "masked_load")
                                    for e in compat.walk_eqns(body)):
            return True
    return False


@contextlib.contextmanager
def random_fill(seed: int) -> Iterator[None]:
    """Within: memory the interpreters leave uninitialised holds random bits from ``seed``."""
    with compat.uninitialized_fill(seed):
        yield


def interpreter_runs(lowered: Lowered, request: JudgeRequest, task: Any,
                     draw: Any) -> tuple[list[tuple[str, Any, Any]], dict[str, Any]]:
    """The interpreters' checks on the trusted side: ``(runs, info)`` where runs are
    ``(label, key, outputs)`` and info says what ran ("ran", "unsupported: ...",
    "unavailable: ...") and whether a race was found."""
    from jaxbench.backends import reset_tpu_interpreter, tpu_check_params

    size = request.size
    chip = request.chip or {}
    closed = exporting.on_judged_chip(lowered.traces[size], request.target,
                                      chip.get("tpu") or exporting.CROSS_LOWERING_TPU,
                                      chip.get("gpu") or exporting.CROSS_LOWERING_GPU)
    runs: list[tuple[str, Any, Any]] = []
    info: dict[str, Any] = {}
    probes = []
    tpu_key = request.tpu_interpreter_key
    if tpu_key is not None:
        probes.append(("tpu_interpreter", tpu_key, lambda: compat.tpu_interpret_params(
            uninitialized_memory="nan", **tpu_check_params(tpu_key[0]))))
    gpu_key = request.gpu_interpreter_key
    if gpu_key is not None and lowered.interpret is None:
        if compat.gpu_interpreter() is None:
            info["gpu_interpreter"] = (f"unavailable: JAX {jax.__version__} has no Mosaic GPU "
                                       "interpreter (JAX 0.11 and later do)")
        else:
            probes.append(("gpu_interpreter", gpu_key,
                           lambda: compat.gpu_interpreter(detect_races=True)))
    for label, key, make_params in probes:
        what = "TPU interpreter: " if label == "tpu_interpreter" else "Mosaic GPU interpreter: "
        fault: tool_faults.ToolFault | None = None
        try:
            with random_fill(secrets.randbits(32)), known_lines({}), \
                    tool_faults.watch() as captured:
                try:
                    fn = jax.jit(compat.jaxpr_as_fun(exporting.with_interpret(closed,
                                                                              make_params())))
                    inputs = draw(key)
                    runs.append((label, key, jax.block_until_ready(fn(*inputs))))
                except NotImplementedError:
                    raise
                except Exception as exc:  # noqa: BLE001 - whose fault: the kernel's or JAX's
                    fault = tool_faults.classify_run(exc, captured, INTERPRETERS[label])
                    if fault is None:
                        raise
            if fault is not None:
                # A crash inside JAX's interpreter is not the kernel's: the kernel is still
                # judged by every other check (the interpret-mode trials, where they exist),
                # and the result warns that this one did not run.
                if label == "tpu_interpreter":
                    reset_tpu_interpreter()
                info[label] = f"failed: {fault.describe()}"[:300]
                info.setdefault("tool_faults", []).append(fault.as_dict())
                continue
            info[f"{label}_race"] = (compat.tpu_races_found() if label == "tpu_interpreter"
                                     else compat.gpu_races_found())
            info[label] = "ran"
        except NotImplementedError as exc:
            info[label] = f"unsupported: {short_error(exc, 200)}"
        except Exception as exc:  # noqa: BLE001
            if label == "tpu_interpreter":
                reset_tpu_interpreter()
            raise StageFailure(Status.RUNTIME_ERROR, Stage.CORRECT, what + short_error(exc),
                               rule=Rule.RUNTIME) from None
    return runs, info
