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
from typing import Any

import jax

from jaxbench import compat
from jaxbench.evaluator.common.schema import StageFailure, short_error
from jaxbench.evaluator.judge import exporting, tool_faults

PLATFORMS = {"tpu": "tpu", "gpu": "cuda"}
# The interpreters the judge runs for their checks, as a fault of theirs names them.
INTERPRETERS = {"tpu_interpreter": "the TPU interpreter",
                "gpu_interpreter": "the Mosaic GPU interpreter"}


@dataclass
class Lowered:
    """What the runner lowered from the hand-over."""

    traces: dict[str, Any]
    target: dict[str, Any] = field(default_factory=dict)  # size -> jax.export.Exported
    interpret: Any = None  # the CPU interpret module (interpret mode), fill A
    interpret_b: Any = None  # the same with fill B (where the kernel could read such memory)
    interpret_error: str = ""
    kernel_ir: list[str] = field(default_factory=list)  # the kernels' own IR (``--save-ir``)
    budget_problem: str = ""  # the estimates' first problem, naming the line
    smem_uncertain: list[dict[str, Any]] = field(default_factory=list)  # per kernel and size


def _types(specs: Any) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(int(d) for d in s.shape), str(s.dtype)) for s in specs]


def _check_types(closed: Any, task: Any, size: str, where: str) -> None:
    """The jaxpr's inputs are the task's at ``size`` (its outputs are checked on the lowered
    module, as every module's are: :func:`jaxbench.evaluator.judge.rules.check_export`)."""
    ins = [(tuple(int(d) for d in a.shape), str(a.dtype)) for a in closed.in_avals]
    want_in = _types(task.input_specs(size))
    if ins != want_in:
        raise StageFailure("rejected", "trace", f"{where}the traced kernel takes {ins}, not the "
                                                f"task's inputs {want_in}")


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
        raise StageFailure("rejected", "trace", f"{where}the handed-over jaxpr does not "
                                                f"type-check: {short_error(exc, 300)}") from None
    from jaxbench.backends.chips import chip_or_default

    judged = chip_or_default(device_kind, target).device_kind  # as the tracer's ChipDevice
    for eqn in compat.walk_eqns(closed.jaxpr):
        # the trace names no chip of its own; a mesh over the chip's device names it
        kind = getattr(compat.eqn_mesh_device(eqn), "device_kind", None)
        if kind is not None and kind not in (device_kind, judged):
            raise StageFailure("rejected", "trace", f"{where}an equation of the handed-over "
                                                    f"jaxpr is lowered for {kind!r}, not for the "
                                                    f"judged {device_kind!r}")


def jaxpr_rules(closed: Any, where: str = "", stage: str = "trace") -> None:
    """The trace-level rules on one jaxpr (kernel bodies and index maps included)."""
    found = exporting.scan(closed)
    problem = ""
    if found.callbacks:
        problem = (f"host callback ({', '.join(sorted(set(found.callbacks)))}) in the kernel: "
                   "all work must run on the device")
    elif found.own_interpret:
        problem = (f"the kernel passes interpret={found.own_interpret[0]} to pallas_call itself: "
                   "kernels never choose interpret mode, the harness does (on a device it would "
                   "time interpreter code)")
    elif found.platform_dependent:
        problem = ("platform-dependent code (lax.platform_dependent) in the kernel: the module "
                   "checked on the CPU and the module run on the chip would differ")
    if problem:
        raise StageFailure("rejected", stage, where + problem)
    if found.kernels == 0:
        raise StageFailure("no_pallas", stage,
                           where + "no pallas_call in the traced kernel: the hot path must be Pallas")


@contextlib.contextmanager
def known_lines(lines: dict[int, tuple[str, int]]) -> Iterator[None]:
    """Within: the equations' lines from the hand-over answer :func:`compat.user_frame`."""
    with compat.eqn_lines(lines):
        yield


def _lowering_failure(exc: BaseException, target: str, size: str, main: str,
                      budget_problem: str) -> StageFailure:
    text = str(exc)
    if "custom calls whose targets have no compatibility guarantees" in text or (
            "callback" in text.lower() and "export" in text.lower()):
        return StageFailure("rejected", "lower", "host callback in the kernel: it cannot be "
                                                 "exported, and all work must run on the device "
                                                 f"({short_error(exc, 200)})")
    hint = ""
    if target == "gpu" and "Cannot lower pallas_call on platform" in text:
        hint = ("GPU kernels must pass compiler_params=plgpu.CompilerParams(...) from "
                "jax.experimental.pallas.triton (the Triton backend); ")
    at = "" if size == main else f" at size {size!r}"
    message = f"lowering for {target}{at}: {hint}{short_error(exc)}"
    if budget_problem:  # the estimate names the tensor and the line; lowering may not
        message = f"{budget_problem}; {message}"
    return StageFailure("compile_error", "lower", message)


def lower(payload: dict[str, Any], request: dict[str, Any], task: Any) -> Lowered:
    """Every rule on the jaxprs, then the modules, for one request."""
    from jaxbench.evaluator.judge import gpu_rules, memory_rules
    from jaxbench.evaluator.judge.triton_rules import location

    size, target, mode = request["size"], request["target"], request["mode"]
    # the target's platform; "cpu" (a test's stand-in for a device) lowers the kernels as the
    # interpreter runs them, the only way Pallas lowers for the CPU
    platform = request.get("platform") or PLATFORMS[target]
    traces = payload["traces"]
    missing = sorted(set(task.inputs) - set(traces))
    if missing:
        raise StageFailure("rejected", "trace", f"the hand-over has no trace at size(s) {missing}")
    order = [size] + [s for s in task.inputs if s != size]
    chip = request.get("chip") or {}
    tpu_kind = chip.get("tpu") or exporting.CROSS_LOWERING_TPU
    gpu_kind = chip.get("gpu") or exporting.CROSS_LOWERING_GPU
    lowered = Lowered(traces={s: traces[s] for s in order})
    with known_lines(payload["lines"]):
        for name in order:
            where = "" if name == size else f"at size {name!r}: "
            _check_types(traces[name], task, name, where)
            jaxpr_rules(traces[name], where, "trace" if name == size else "lower")
            well_formed(traces[name], tpu_kind if target == "tpu" else gpu_kind, target, where)
        race_unknown = ""
        if target == "gpu" and request.get("gpu_race_rule", True):
            verdict = gpu_rules.race_verdict(traces[size])
            if verdict.race:
                raise StageFailure("incorrect", "lower", f"GPU race rule: {verdict.race}")
            race_unknown = verdict.unknown  # never a race charged to the kernel: `unverified`
        locate = location(request.get("source"), request.get("filename", "<kernel>"))
        for name in order:
            try:
                problem, figures = memory_rules.check(traces[name], target, name, tpu_kind,
                                                      gpu_kind, locate)
            except Exception:  # noqa: BLE001 - an estimate that fails decides nothing
                problem, figures = "", []
            # shared memory between what Triton surely needs and the estimate: Triton's own
            # compile decides where it runs, else the result warns
            lowered.smem_uncertain += [f for f in figures if f.get("smem_uncertain")]
            if problem:
                lowered.budget_problem = problem
                break
        from jaxbench.evaluator.common.artifacts import capture_kernel_ir

        for name in order:
            specs = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in task.input_specs(name)]
            capture = name == size and request.get("save_ir")
            try:
                with capture_kernel_ir() if capture else contextlib.nullcontext([]) as ir, \
                        tool_faults.watch():
                    lowered.target[name] = exporting.export(
                        traces[name], specs, platform, interpret=platform == "cpu",
                        tpu_device_kind=tpu_kind, gpu_device_kind=gpu_kind,
                        portable=mode == "interpret", target=target)
                lowered.kernel_ir += ir
            except Exception as exc:  # noqa: BLE001 - JAX refused to lower the kernel
                fault = tool_faults.classify(exc, f"JAX's lowering for {target}")
                if fault is not None and not lowered.budget_problem:
                    at = "" if name == size else f" at size {name!r}"
                    raise StageFailure("unverified", "lower", (
                        f"lowering for {target}{at}: {fault.describe()}: the judge cannot "
                        "check or run the kernel with this JAX (the chip's own lowering is "
                        "the same code)")[:2000]) from None
                raise _lowering_failure(exc, target, name, size,
                                        lowered.budget_problem) from None
        if mode == "interpret":
            specs = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in task.input_specs(size)]
            chip = {"tpu_device_kind": tpu_kind, "gpu_device_kind": gpu_kind, "target": target}
            try:
                with tool_faults.watch():
                    with random_fill(secrets.randbits(32)):
                        lowered.interpret = exporting.export(traces[size], specs, "cpu",
                                                             interpret=True, **chip)
                    if may_read_uninitialized(traces[size]):
                        with random_fill(secrets.randbits(32)):
                            lowered.interpret_b = exporting.export(traces[size], specs, "cpu",
                                                                   interpret=True, **chip)
            except Exception as exc:  # noqa: BLE001 - the parent makes this `unverified`
                lowered.interpret = lowered.interpret_b = None
                fault = tool_faults.classify(exc, "JAX's interpret-mode lowering")
                lowered.interpret_error = (fault.describe() if fault is not None
                                           else short_error(exc, 300))[:300]
    if race_unknown and not lowered.budget_problem:  # (a budget problem is refused later)
        raise StageFailure("unverified", "lower", f"GPU race rule: {race_unknown}")
    return lowered


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


def interpreter_runs(lowered: Lowered, request: dict[str, Any], task: Any,
                     draw: Any) -> tuple[list[tuple[str, Any, Any]], dict[str, Any]]:
    """The interpreters' checks on the trusted side: ``(runs, info)`` where runs are
    ``(label, key, outputs)`` and info says what ran ("ran", "unsupported: ...",
    "unavailable: ...") and whether a race was found."""
    from jaxbench.backends import reset_tpu_interpreter, tpu_check_params

    size = request["size"]
    chip = request.get("chip") or {}
    closed = exporting.on_judged_chip(lowered.traces[size], request["target"],
                                      chip.get("tpu") or exporting.CROSS_LOWERING_TPU,
                                      chip.get("gpu") or exporting.CROSS_LOWERING_GPU)
    runs: list[tuple[str, Any, Any]] = []
    info: dict[str, Any] = {}
    probes = []
    tpu_key = request.get("tpu_interpreter_key")
    if tpu_key is not None:
        probes.append(("tpu_interpreter", tpu_key, lambda: compat.tpu_interpret_params(
            uninitialized_memory="nan", **tpu_check_params(tpu_key[0]))))
    gpu_key = request.get("gpu_interpreter_key")
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
            raise StageFailure("runtime_error", "correct", what + short_error(exc)) from None
    return runs, info
