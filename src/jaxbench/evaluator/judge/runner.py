"""The trusted runner: derives, checks and runs modules; never imports candidate code.

Started as ``python -m jaxbench.evaluator.judge.runner`` and kept warm across
evaluations (it runs no candidate Python, only JAX's own lowering of data it has
checked). It reads one JSON request per line on stdin and answers one JSON line
on its private copy of stdout. A request names a directory, written by the
parent, holding the tracer's hand-over (``jaxpr.pkl``). The runner reads it
(:mod:`jaxbench.evaluator.judge.jaxpr_reader`), applies the jaxpr rules and
lowers the target module at every size and the interpret module itself
(:mod:`jaxbench.evaluator.judge.lowering`), applies
:mod:`jaxbench.evaluator.judge.rules` and the budgets, runs the interpreters'
checks, draws the trial inputs from the keys in the request (the only place
besides the parent that ever holds real inputs), runs the module, writes the
outputs to ``outputs.npy`` in that directory, and on a device times the target
module against the reference and runs it once more on new inputs. The parent compares
the outputs with the float32 truth and computes every figure. On a device the
runner asks the parent for the device lease before timing and gives it back after
(``{"lease": "exclusive"|"shared"}`` lines, answered ``go`` on stdin), so that
concurrent evaluations never time while another compiles or times.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from jaxbench.contract import (
    RAN,
    Finding,
    JudgeRequest,
    JudgeResponse,
    RecordError,
    Rule,
    Stage,
    StageFailure,
    Status,
)
from jaxbench.evaluator.common.errors import short_error
from jaxbench.evaluator.common.lease import OWNER_DEPTH
from jaxbench.evaluator.judge.gpu.triton_compile import kernels_to_compile

if TYPE_CHECKING:
    from jaxbench.evaluator.judge.jaxpr_reader import Handover
    from jaxbench.evaluator.judge.memory_rules import KernelFigures

_perf_counter = time.perf_counter
# A chip owner serving several requests at once: the lease lines of its own chip lease (the
# timing's "exclusive" and "shared" are answered by the parent's lease where one request is
# served at a time).
CHIP, FREE = "chip", "free"
HANDOVER = "jaxpr.pkl"  # the tracer's traced jaxprs, the one thing it hands over
# What the kernels' work was counted on (the structure figures' ``kernel_work_counted_on``).
COUNTED_ON_TRIAL = ("the first trial's data: the kernels' integer operands as they are there, "
                    "and the grids, loops and branches that follow them as they run")
COUNTED_ON_TRACE = ("the traced program alone: no kernel has an integer operand that the "
                    "data decides")
COUNTED_ON_CHIP = ("the first trial's data on the chip: the kernels' integer operands as the "
                   "chip computes them from its floats (a router's logits), and the grids, "
                   "loops and branches that follow them as they run")
PENDING_ON_CHIP = ("not yet: the kernels' work follows floats, so it is counted on the first "
                   "trial's data on the chip")
CLEAR_CACHES_EVERY = 16


def _spec_types(specs: Any) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(int(d) for d in s.shape), str(s.dtype)) for s in specs]


def _inputs(task: Any, key: list[int], size: str) -> Any:
    import jax
    import numpy as np

    return task.make_inputs(jax.random.wrap_key_data(np.asarray(key, np.uint32)), size)


def _elements(types: list[tuple[tuple[int, ...], str]]) -> int:
    import math

    return sum(math.prod(shape) for shape, _ in types)


def _structure(exported: Any, platform: str) -> Any:
    from jaxbench.evaluator.judge.structure import analyze

    try:
        return analyze(exported.mlir_module(), platform)
    except (ValueError, RecursionError) as exc:  # what no honest export produces
        raise StageFailure(Status.REJECTED, Stage.LOWER, "the exported module cannot be "
                           f"analysed: {short_error(exc, 200)}", rule=Rule.UNANALYSABLE) from None


def _budgets(request: JudgeRequest, task: Any, platform: str,
             lowered: Any) -> tuple[str, list[KernelFigures]]:
    """(problem or '', figures): the on-chip memory budgets of the target modules this runner
    lowered at every size, each checked as the main one is (platform, effects, the size's
    types). The problem is a :class:`Finding` with its rule code; where the judge cannot
    compute a budget, the code is ``tool_fault`` (the parent makes that `unverified`)."""
    import jax

    from jaxbench.evaluator.judge import budgets, rules

    for size, module in lowered.target.items():
        try:
            outs = jax.tree_util.tree_leaves(task.output_shapes(size))
            rules.check_export(module, platform, _spec_types(task.input_specs(size)),
                               _spec_types(outs), f"the size {size!r}")
        except StageFailure as failure:
            return Finding(f"memory budget at size {size!r}: {failure.message}",
                           failure.rule or Rule.EXPORT_CONTRACT), []
    chip = request.chip
    try:
        return budgets.check(dict(lowered.target), platform,
                             chip.get("tpu") or budgets.DEFAULT_TPU,
                             chip.get("gpu") or budgets.DEFAULT_GPU)
    except Exception as exc:  # noqa: BLE001 - the judge's own failure: it cannot know
        return Finding(f"memory budget: the judge could not compute it: "
                       f"{short_error(exc, 300)}", Rule.TOOL_FAULT), []


class _Judging:
    """One request's state as :func:`judge` walks its phases (no candidate code runs here)."""

    def __init__(self, request: JudgeRequest, lease: Callable[[str], None]) -> None:
        import jax

        from jaxbench.tasks import load_task

        self.request, self.lease = request, lease
        self.directory = Path(request.dir)
        # a task file's task: loaded here from the path the parent gives (never in the tracer)
        self.task = load_task(request.task, request.task_file)
        self.size, self.platform, self.mode = request.size, request.platform, request.mode
        self.in_types = _spec_types(self.task.input_specs(self.size))
        self.out_types = _spec_types(jax.tree_util.tree_leaves(self.task.output_shapes(self.size)))
        self.response = JudgeResponse(device_kind=_own_device()["device_kind"],
                                      backend=jax.default_backend())
        self.payload = cast("Handover", {})  # the hand-over, once read() has read it
        self.lowered: Any = None
        self.runs: list[tuple[str, Any, Any]] = []
        self.truths: list[tuple[str, Any, Any]] = []  # device mode: the float32 truths
        self.compiled: Any = None
        self.comparisons: dict[tuple[Any, ...], Any] = {}  # device mode: chip_verdict.prepare
        self.first: Any = None
        self.fit: Any = None  # device mode: what fits the chip (judge/fitting.py)
        self.holding = False  # device mode: this request holds the chip (on_chip)
        self.on_chip_floats: Any = None  # device mode: the count left to the chip's floats
        # the compile cache for the task's own programs (judge/xla_cache.py), where asked for
        from jaxbench.evaluator.judge import xla_cache

        self.cache_on = bool(request.xla_cache) and xla_cache.enable() is not None
        self.cache_counts = {"hits": 0, "misses": 0}

    def inputs(self, key: list[int]) -> Any:
        if self.fit is not None:  # on a device: the drawing compiled once per owner
            import jax
            import numpy as np

            return self.fit.draw(jax.random.wrap_key_data(np.asarray(key, np.uint32)))
        with _task_side(self):
            return _inputs(self.task, key, self.size)

    def timed(self, name: str, t0: float, **extra: Any) -> None:
        self.response.stages[name] = {"seconds": round(_perf_counter() - t0, 4), **extra}
        if name in ("read", Stage.LOWER, "check", "probe"):  # the spans of what has no parts
            self.span(name, t0)

    # -- read and lower -------------------------------------------------------------------------
    def read(self) -> None:
        from jaxbench.evaluator.judge import jaxpr_reader, lowering

        t0 = _perf_counter()
        if self.request.tokamax:  # an allowed library the kernel imports: its primitives are known
            with contextlib.suppress(ImportError):
                import tokamax  # noqa: F401
        self.payload = jaxpr_reader.read((self.directory / HANDOVER).read_bytes())
        self.timed("read", t0)
        t0 = _perf_counter()
        self.lowered = lowered = lowering.lower(self.payload, self.request, self.task)
        self.timed(Stage.LOWER, t0)
        if lowered.interpret_error:
            self.response.stages[Stage.LOWER]["interpret_export_error"] = lowered.interpret_error
        self.response.budget_problem = lowered.budget_problem  # the estimate's, naming the line
        self.response.budget_rule = lowered.budget_rule
        self.response.smem_uncertain = lowered.smem_uncertain  # Triton's compile decides, or a warning
        if lowered.tool_faults:
            self.response.tool_faults.extend(lowered.tool_faults)

    # -- the structure rules and the budgets ------------------------------------------------------
    def check(self) -> None:
        from jaxbench.backends import kernel_backend_of_calls
        from jaxbench.evaluator.judge import rules

        response, lowered, size = self.response, self.lowered, self.size
        t0 = _perf_counter()
        target = lowered.target[size]
        rules.check_export(target, self.platform, self.in_types, self.out_types, "target")
        response.structure = _structure_rules(self, target)
        response.kernel_backend = kernel_backend_of_calls(response.structure["custom_calls"])
        # (a "cpu" target, a test's stand-in for a device, has no chip whose memory to count)
        problem, figures = _budgets(self.request, self.task, self.platform, lowered) \
            if self.platform != "cpu" else ("", [])
        if problem and not response.budget_problem:
            response.budget_problem = problem
            response.budget_rule = problem.rule
        response.memory = figures
        if self.platform == "cuda" and self.mode == "interpret":  # no GPU here: check the IR ourselves
            response.triton_kernels = kernels_to_compile(
                target, lowered.target, {f.get("size") for f in lowered.smem_uncertain},
                self.size)
        if lowered.interpret is not None:
            rules.check_export(lowered.interpret, "cpu", self.in_types, self.out_types,
                               "interpret-mode")
        self.timed("check", t0)
        if self.request.save_ir:
            response.stablehlo = target.mlir_module()
            response.jaxpr = str(lowered.traces[size])[:2_000_000]
            response.kernel_ir = "\n\n".join(lowered.kernel_ir)

    def probe(self) -> None:
        from jaxbench.evaluator.judge import lowering

        t0 = _perf_counter()
        probes, info = lowering.interpreter_runs(self.lowered, self.request, self.task,
                                                 self.inputs)
        if info.get("tool_faults"):
            info["tool_faults"] = self.response.tool_faults + info["tool_faults"]
        self.response = dataclasses.replace(self.response, **info)
        self.runs += probes
        if probes or info:
            self.timed("probe", t0)

    def draw(self, key: list[int]) -> Any:
        """One key's inputs, drawn once (on the chip in device mode), timed as ``inputs``."""
        import jax

        with self.on_chip(self.mode == "device"):
            t0 = _perf_counter()
            inputs = jax.block_until_ready(self.inputs(key))
            self.span("inputs", t0)
        return inputs

    @contextlib.contextmanager
    def on_chip(self, device: bool = True) -> Any:
        """Holds the chip while inside (device mode): ``lease(CHIP)`` / ``lease(FREE)``. A
        chip's owner serving several requests at once (:func:`serve_concurrently`) lets one
        of them at a time use the chip, from its first input drawn to its outputs written;
        their compiles run beside it, outside. Re-entrant; a no-op for a runner that serves
        one request at a time (it answers only the timing's exclusive and shared)."""
        if not device or self.holding:
            yield
            return
        waiting = _perf_counter()
        self.lease(CHIP)
        self.span("chip_lease_wait", waiting)
        self.holding = True
        held = _perf_counter()
        try:
            yield
        finally:
            self.holding = False
            self.lease(FREE)
            spent = self.response.stages.setdefault("chip_held", {"seconds": 0.0})
            spent["seconds"] = round(spent["seconds"] + _perf_counter() - held, 4)

    def span(self, name: str, t0: float) -> None:
        """Adds the seconds since ``t0`` to span ``name`` (the response's ``spans``)."""
        spans = self.response.spans
        spans[name] = round(spans.get(name, 0.0) + _perf_counter() - t0, 4)

    def fits(self) -> None:
        """On a device, before anything runs there: whether the reference (the timing's
        baseline) and the float32 truth fit the chip's memory at this size, from XLA compiling
        them for it; the compiled reference is kept for the timing."""
        from jaxbench.evaluator.judge import fitting

        t0 = _perf_counter()
        with _task_side(self):
            self.fit = fitting.check(self.task, self.size)
        self.response.fits = self.fit.record()
        self.span("reference_compile", t0)
        self.response.stages["task_programs"] = {  # their compiles: here, or when first kept
            "seconds": round(_perf_counter() - t0, 4), **self.fit.compile_s}
        if self.cache_on:
            self.response.stages["compile_cache"] = {
                "seconds": round(_perf_counter() - t0, 4), **self.cache_counts}

    def trials(self) -> None:
        import jax

        from jaxbench.evaluator.judge import tool_faults

        lowered, mode = self.lowered, self.mode
        module = lowered.interpret if mode == "interpret" else lowered.target[self.size]
        t0 = _perf_counter()
        try:
            with tool_faults.watch() as captured:
                self.first = first = self.first if self.first is not None else self.draw(
                    self.request.trial_keys[0])
                _count_on_chip(self)
                if self.compiled is None:  # device mode compiled it before the chip
                    t1 = _perf_counter()
                    self.compiled = jax.jit(module.call).lower(*first).compile()
                    self.response.compile_s = round(_perf_counter() - t1, 4)
                    self.span("kernel_compile", t1)
                trials = []
                for i, key in enumerate(self.request.trial_keys):
                    inputs = first if i == 0 else self.draw(key)
                    _race_on_trial(self, i, inputs)
                    trials.append(self.run_once(f"trial{i}", key, inputs))
                if lowered.interpret_b is not None:  # the first trial, other uninitialised memory
                    t1 = _perf_counter()
                    other = jax.jit(lowered.interpret_b.call).lower(*first).compile()
                    _same_outputs(trials[0][2], jax.block_until_ready(other(*first)),
                                  lowered.traces.get(self.size))
                    self.span("second_fill", t1)
            self.runs += trials
        except StageFailure:
            raise
        except Exception as exc:  # noqa: BLE001
            # A crash inside JAX's own code is not the kernel's: nothing vouches for the outputs
            fault = tool_faults.classify_run(exc, captured, "JAX's interpret-mode run" if
                                             mode == "interpret" else "JAX's run of the module")
            if fault is not None:
                raise StageFailure(Status.UNVERIFIED, Stage.CORRECT, fault.describe()[:2000],
                                   rule=Rule.TOOL_FAULT) from None
            if "RESOURCE_EXHAUSTED" in str(exc):
                raise StageFailure(Status.CRASHED, Stage.CORRECT, short_error(exc),
                                   rule=Rule.MEMORY_LIMIT) from None
            raise StageFailure(Status.RUNTIME_ERROR, Stage.CORRECT, short_error(exc),
                               rule=Rule.RUNTIME) from None
        self.timed(Stage.CORRECT, t0)
        if lowered.race_unknown:
            self.response.stages[Stage.CORRECT]["gpu_race_rule"] = (
                f"race-free on each of the {len(self.request.trial_keys)} trials' inputs; residual "
                f"risk: before any input it could not decide ({lowered.race_unknown[:300]}), so "
                "inputs other than the trials' are not covered")

    def run_once(self, label: str, key: list[int], inputs: Any) -> tuple[str, Any, Any]:
        """The module on one key's inputs; on a device the float32 truth of the same inputs is
        computed there while they are on the chip, and the two are compared there
        (:func:`_on_chip`)."""
        import jax

        t0 = _perf_counter()
        outputs = jax.block_until_ready(self.compiled(*inputs))
        self.span("trials", t0)
        if self.mode == "device":
            return _on_chip(self, label, key, inputs, outputs)
        return (label, key, outputs)

    # -- the outputs (and on a device the float32 truth) ------------------------------------------
    def write_outputs(self) -> None:
        from jaxbench.evaluator.common.arrays import pack

        t0 = _perf_counter()
        data, layout = pack([run for run in self.runs if run[2] is not None])
        (self.directory / "outputs.npy").write_bytes(data)
        self.response.trials = layout
        self.runs = []
        del data
        if self.truths:  # device mode: the float32 truths computed beside the trials
            data, layout = pack(self.truths)
            (self.directory / "truth.npy").write_bytes(data)
            self.response.truth = layout
            self.truths = []
        self.compiled = self.first = None
        self.span("outputs", t0)


def _on_chip(judging: _Judging, label: str, key: list[int], inputs: Any,
             outputs: Any) -> tuple[str, Any, Any]:
    """A device trial's outputs against their float32 truth, computed beside them: where they
    clearly pass, only the figures go to the parent (``response.verdicts``, judge/
    chip_verdict.py); else the outputs and the truth go to the host for the parent to compare
    and describe. ``(label, key, None)`` marks a trial decided here."""
    import jax
    import numpy as np

    from jaxbench.evaluator.judge import chip_verdict

    t0 = _perf_counter()
    try:
        truth = judging.fit.truth(inputs, host=False)
    except Exception as exc:  # noqa: BLE001 - the task's reference, not the kernel
        raise StageFailure(Status.UNVERIFIED, Stage.CORRECT, "the float32 truth could not "
                           f"be computed ({judging.fit.truth_on}), so nothing can judge the "
                           f"outputs: {short_error(exc, 400)}", rule=Rule.NO_TRUTH) from None
    judging.span("truth", t0)
    t0 = _perf_counter()
    leaves = jax.tree_util.tree_leaves(outputs)
    figures = chip_verdict.clear_pass(leaves, judging.out_types, truth, judging.task.atol,
                                      judging.task.rtol, judging.comparisons)
    judging.span("compare_on_chip", t0)
    if figures is not None:
        judging.response.verdicts[label] = {**figures, "key": key}
        return (label, key, None)
    t0 = _perf_counter()
    judging.truths.append((label, key, [np.asarray(x, np.float32) for x in truth]))
    host = [np.asarray(x) for x in leaves]
    judging.span("outputs", t0)
    return (label, key, host)


@contextlib.contextmanager
def _task_side(judging: _Judging) -> Any:
    """Compiles inside are the task's own programs: kept in the compile cache (where it is
    on) and counted (the response's ``compile_cache`` step)."""
    from jaxbench.evaluator.judge import xla_cache

    with xla_cache.task_side(judging.cache_on), xla_cache.counting() as counts:
        try:
            yield
        finally:
            for name in ("hits", "misses"):
                judging.cache_counts[name] += counts[name]


# A chip's owner serves several requests at once; a whole full-size draw on the host can take
# gigabytes (13p_cross_entropy's: 9.4 GiB at its peak), so only one request does it at a time.
_HOST_FLOATS = threading.Lock()


def _structure_rules(judging: _Judging, target: Any) -> dict[str, Any]:
    """The structure rules on the target module with the kernels' own work, counted on the
    first trial's data where a kernel's integer operands depend on it (:func:`_kernel_work`):
    the loops, branches and grids that follow them are counted as they run there, for
    credit and for refusal alike. Fails closed: where the counter or a rule itself raises,
    nothing vouches that the kernel keeps its work in Pallas, so the verdict is
    `unverified` with the code of the step that failed (never a rule skipped, never
    `correct`)."""
    from jaxbench.evaluator.judge import rules

    size = judging.size
    known, kernels = _kernel_work(judging)

    def check(report: Any, kernels: Any) -> dict[str, Any]:
        return rules.check_target(report, judging.task.flops(size),
                                  judging.request.max_outside_flops_fraction, kernels,
                                  judging.task.work,
                                  _elements(judging.in_types + judging.out_types))

    try:
        report = _structure(target, judging.platform)
        figures = check(report, kernels)
    except StageFailure as failure:
        if known is not None and failure.rule in (Rule.OUTSIDE_FLOPS, Rule.OUTSIDE_BYTES) \
                and judging.mode != "interpret":
            with _HOST_FLOATS:  # one request at a time draws whole inputs on the host
                figures = _on_host_floats(judging, _trial_inputs(judging, floats=True),
                                          report, check)
            if figures is not None:  # the floats would lift it: the chip's decide (trials())
                judging.on_chip_floats = (report, check)
                figures["kernel_work_counted_on"] = PENDING_ON_CHIP
                return figures
        if known is not None and failure.rule in (Rule.OUTSIDE_FLOPS, Rule.OUTSIDE_BYTES,
                                                  Rule.OUTPUT_WITHOUT_KERNEL):
            raise StageFailure(failure.status, failure.stage, f"{failure.message} (the "
                               f"kernels' work counted on {COUNTED_ON_TRIAL})",
                               rule=failure.rule) from None
        raise
    except Exception as exc:  # noqa: BLE001 - a rule failing, not deciding: it cannot know
        raise StageFailure(Status.UNVERIFIED, Stage.LOWER, "the module's analysis or a "
                           f"structure rule failed while it checked the kernel: "
                           f"{short_error(exc, 300)}",
                           rule=Rule.STRUCTURE_RULE_FAULT) from None
    figures["kernel_work_counted_on"] = COUNTED_ON_TRIAL if known is not None \
        else COUNTED_ON_TRACE
    return figures


def _on_host_floats(judging: _Judging, known: list[Any], report: Any,
                    check: Any) -> dict[str, Any] | None:
    """The structure figures with the kernels' work counted on values computed on this host
    from the trial's floats too, or None where the outside-work rules refuse it (or the count
    fails) there as well. Device mode only decides on them whether the chip's floats are worth
    asking (:func:`_count_on_chip`): never credit."""
    from jaxbench.evaluator.judge import kernel_work

    trace, lines = judging.lowered.traces[judging.size], judging.payload["lines"]
    try:
        return check(report, kernel_work.count(trace, lines, known, floats=True))
    except Exception:  # noqa: BLE001 - refused (or unknown) on the floats too: the refusal stands
        return None


def _count_on_chip(judging: _Judging) -> None:
    """Device mode, where the structure rules refused a kernel whose work follows floats (a
    router's logits) and would pass counted on the host's: the first trial's inputs are on the
    chip now, so the kernels' work is counted on what the chip computes from them (one XLA
    program there, :func:`kernel_work._fused_values`), for credit and for refusal alike,
    before any trial runs. Where the chip cannot compute them the verdict is `unverified`
    (`work_routed_by_floats`): the host's floats never decide for the chip."""
    from jaxbench.evaluator.judge import kernel_work

    if judging.on_chip_floats is None:
        return
    (report, check), judging.on_chip_floats = judging.on_chip_floats, None
    trace, lines = judging.lowered.traces[judging.size], judging.payload["lines"]
    t0 = _perf_counter()
    try:
        kernels = kernel_work.count(trace, lines, list(judging.first), floats=True,
                                    fused=True)
    except Exception as exc:  # noqa: BLE001 - the chip could not compute them: cannot know
        raise StageFailure(Status.UNVERIFIED, Stage.LOWER, "the kernels' work follows values "
                           "the traced program computes from floats (a router's logits, say), "
                           "and the chip could not compute them on the first trial's inputs, so "
                           f"nothing counts it: {short_error(exc, 300)}",
                           rule=Rule.WORK_ROUTED_BY_FLOATS) from None
    finally:
        judging.span("count_on_chip", t0)
    try:
        figures = check(report, kernels)
    except StageFailure as failure:
        raise StageFailure(failure.status, failure.stage, f"{failure.message} (the kernels' "
                           f"work counted on {COUNTED_ON_CHIP})", rule=failure.rule) from None
    except Exception as exc:  # noqa: BLE001 - a rule failing, not deciding: it cannot know
        raise StageFailure(Status.UNVERIFIED, Stage.LOWER, "a structure rule failed while it "
                           f"checked the kernel: {short_error(exc, 300)}",
                           rule=Rule.STRUCTURE_RULE_FAULT) from None
    figures["kernel_work_counted_on"] = COUNTED_ON_CHIP
    judging.response.structure = figures


def _kernel_work(judging: _Judging) -> tuple[list[Any] | None, Any]:
    """(the trial's inputs it counted on, or None; the kernels' own work): counted on the
    traced program, and again on the first trial's inputs where a kernel has an integer
    operand the trace alone does not know (a grid bound, a table, lengths, group sizes).
    A counter that fails is `unverified` (it cannot know)."""
    from jaxbench.evaluator.judge import kernel_work

    trace, lines = judging.lowered.traces[judging.size], judging.payload["lines"]
    try:
        kernels = kernel_work.count(trace, lines)
        if not kernels.wants_data:
            return None, kernels
        known = _trial_inputs(judging)
        # floats decide only where this host runs the trial: the interpreter's CPU
        return known, kernel_work.count(trace, lines, known,
                                        floats=judging.mode == "interpret")
    except Exception as exc:  # noqa: BLE001 - the judge's own counter failing: it cannot know
        raise StageFailure(Status.UNVERIFIED, Stage.LOWER, "the judge could not count the "
                           f"kernels' own work, so the outside-work rules cannot be applied: "
                           f"{short_error(exc, 300)}", rule=Rule.KERNEL_WORK_FAULT) from None

def _trial_inputs(judging: _Judging, floats: bool = False) -> list[Any]:
    """The first trial's inputs on the host. In interpret mode they are the first trial's
    own, kept for it. On a device the same key draws the same values on the host's CPU (the
    counter reads integers and computes on the host, never on the chip): only the integer and
    boolean inputs, the others None (unknown), unless ``floats``. The host count without
    floats never reads a float, and a full-size float input drawn on the host for nothing
    cost gigabytes of the host's memory per request (a v5e host ran out with three
    cross-entropy candidates beside each other)."""
    import jax
    import numpy as np

    if judging.mode == "interpret":
        judging.first = judging.first if judging.first is not None else judging.draw(
            judging.request.trial_keys[0])
        return [np.asarray(x) for x in judging.first]
    specs = judging.task.input_specs(judging.size)
    wanted = tuple(i for i, spec in enumerate(specs)
                   if floats or np.dtype(spec.dtype).kind in "biu")
    key = jax.random.wrap_key_data(np.asarray(judging.request.trial_keys[0], np.uint32))
    t0 = _perf_counter()
    with jax.default_device(jax.devices("cpu")[0]):
        drawn = jax.block_until_ready(judging.task.drawing_of(judging.size, wanted)(key))
    judging.span("inputs", t0)
    inputs: list[Any] = [None] * len(specs)
    for i, value in zip(wanted, drawn, strict=True):
        inputs[i] = np.asarray(value)
    return inputs


def _compile_kernel(judging: _Judging) -> None:
    """Device mode: the kernel's module compiled for the chip from its input types, before
    the chip is held (XLA's compile needs the host's cores, not the chip). Where it fails,
    :meth:`_Judging.trials` compiles again and judges the failure as it always did."""
    import jax

    from jaxbench.evaluator.judge import chip_verdict, tool_faults, xla_cache
    from jaxbench.evaluator.judge.fitting import specs_of

    t1 = _perf_counter()
    try:
        with tool_faults.watch():
            module = judging.lowered.target[judging.size]
            judging.compiled = jax.jit(module.call).lower(
                *specs_of(judging.task.input_specs(judging.size))).compile()
    except Exception:  # noqa: BLE001 - judged where trials() compiles it again
        judging.compiled = None
        return
    judging.response.compile_s = round(_perf_counter() - t1, 4)
    judging.span("kernel_compile", t1)
    t1 = _perf_counter()  # the trials' comparison on the chip, compiled off the chip's path
    with xla_cache.task_side(judging.cache_on):  # the harness's program: kept like the task's
        judging.comparisons = chip_verdict.prepare(judging.out_types, judging.task.atol,
                                                   judging.task.rtol)
    judging.span("compare_compile", t1)


def _race_on_trial(judging: _Judging, index: int, inputs: Any) -> None:
    """The GPU race rule, undecided before any trial, decided on this trial's inputs."""
    from jaxbench.evaluator.judge import lowering
    from jaxbench.evaluator.judge.gpu import race

    if not judging.lowered.race_unknown:
        return
    with lowering.known_lines(judging.payload["lines"]):  # messages name the kernel's line
        verdict = race.race_verdict(judging.lowered.race_trace, inputs)
    if verdict.race:
        raise StageFailure(Status.INCORRECT, Stage.LOWER, f"GPU race rule, on the inputs of "
                           f"trial {index}: {verdict.race}", rule=Rule.GPU_RACE)
    if verdict.unknown:
        raise lowering.race_unknown_failure(verdict.unknown)


def _time_on_chip(judging: _Judging) -> None:
    """The timing (the reference, when it fits, against the module, interleaved, inputs
    rotating; the device's own times from the profiler beside the wall clock) and the recheck
    on new inputs, with its truth."""
    from jaxbench.evaluator.judge.timing import time_adaptive, time_interleaved

    request, first, compiled = judging.request, judging.first, judging.compiled
    reference = judging.fit.reference
    if reference is not None:
        try:
            sets = [first] + [judging.draw(k) for k in request.timing_keys]
            waiting = _perf_counter()
            judging.lease("exclusive")
            judging.span("timing_wait", waiting)
            t0 = _perf_counter()
            waited = t0 - waiting
            options = dict(request.timing)
            device_reps = int(options.pop("device_reps", 10))  # 0: wall clock only
            reuse = bool(options.pop("reuse_reference", 1))
            adaptive = {k: options.pop(k) for k in ("interval", "near", "check_reps")
                        if k in options}
            timing: Any = None
            failed: Any = None
            if device_reps > 0:  # on the device, until the speedup is known well enough
                timing = time_adaptive(
                    reference, compiled, sets, perf_counter=_perf_counter,
                    known=judging.fit.reference_times if reuse else None,
                    device_reps=device_reps, **options, **adaptive,
                    directory=str(judging.directory / "trace"))  # other meaning: a folder
                if "error" in timing["device"]:
                    failed, timing = timing["device"], None
                elif timing["reference"] != "reused":  # kept for the next candidates
                    judging.fit.reference_times = {"device": timing["device"]["ref_s"],
                                                   "wall": timing["ref_s"]}
            if timing is None:  # the wall clock alone, both sides interleaved
                timing = time_interleaved(reference, compiled, sets,
                                          perf_counter=_perf_counter, **options)
                if failed is not None:
                    timing["device"] = failed
            judging.response.timing = timing
            if request.save_ir:
                from jaxbench.evaluator.common.artifacts import compiled_artifacts

                judging.response.compiled_artifacts = compiled_artifacts(compiled)
        except Exception as exc:  # noqa: BLE001
            raise StageFailure(Status.RUNTIME_ERROR, Stage.TIME, short_error(exc),
                               rule=Rule.RUNTIME) from None
        judging.timed(Stage.TIME, t0, lease_wait_s=round(waited, 4))
        judging.span(Stage.TIME, t0)
        del sets
        judging.lease("shared")
    t0 = _perf_counter()
    try:
        for i, key in enumerate(request.recheck_keys):
            judging.runs.append(judging.run_once(f"recheck{i}", key, judging.draw(key)))
    except StageFailure:
        raise
    except Exception as exc:  # noqa: BLE001
        raise StageFailure(Status.RUNTIME_ERROR, Stage.RECHECK, short_error(exc),
                           rule=Rule.RUNTIME) from None
    judging.timed(Stage.RECHECK, t0)


def judge(request: JudgeRequest | dict[str, Any],
          lease: Callable[[str], None] = lambda kind: None) -> JudgeResponse:
    """One evaluation's trusted work, from the tracer's jaxpr hand-over; raises StageFailure
    for a verdict other than 'ran'. ``lease(kind)`` returns once the device lease
    (:mod:`jaxbench.evaluator.common.lease`) is held that way: the timing is the only part that
    holds it exclusively. The phases: read and lower; the structure rules and the budgets
    (a budget problem ends it there: the parent refuses the kernel after the structure rules);
    the interpreters' checks; the trials (none where no interpret-mode module exists: the parent
    makes that `unverified`); on a device the timing and the recheck; the outputs."""
    if isinstance(request, dict):
        request = JudgeRequest.from_dict(request)
    judging = _Judging(request, lease)
    try:
        return _walk(judging, request)
    except StageFailure as failure:
        raise JudgeFailed(failure, judging.response) from None


class JudgeFailed(StageFailure):
    """A judge request's failure with its response, assembled where the judge stopped: the
    verdict's fields, and of what it had found by then its spans and the fits (the parent
    reads them from any response)."""

    def __init__(self, failure: StageFailure, found: JudgeResponse) -> None:
        super().__init__(failure.status, failure.stage, failure.message, rule=failure.rule)
        self.response = failed_response(failure, spans=found.spans, fits=found.fits)


def failed_response(failure: StageFailure, **found: Any) -> JudgeResponse:
    """The response of a request that ``failure`` ended (with ``found``, where it got that
    far): the one place the judge turns a failure into its record."""
    return JudgeResponse(status=failure.status, stage=failure.stage, message=failure.message,
                         rule=failure.rule, **found)


def _walk(judging: _Judging, request: JudgeRequest) -> JudgeResponse:
    judging.read()
    judging.check()
    if judging.response.budget_problem:
        return judging.response
    judging.probe()
    device = judging.mode == "device"
    runs = judging.mode != "interpret" or judging.lowered.interpret is not None
    if not runs and judging.lowered.race_unknown:  # no trial to decide the race rule on
        from jaxbench.evaluator.judge.lowering import race_unknown_failure

        raise race_unknown_failure(judging.lowered.race_unknown)
    if device:  # compiles for the chip, beside whatever the chip runs now
        judging.fits()
        if runs:
            _compile_kernel(judging)
    with judging.on_chip(device):  # then the chip: the trials, the timing, the outputs
        if runs:
            judging.trials()
            if device and request.time:
                _time_on_chip(judging)
        judging.write_outputs()
    # fails closed: a count left to the chip's floats that never ran
    if judging.on_chip_floats is not None:
        raise StageFailure(Status.UNVERIFIED, Stage.LOWER, "the kernels' work follows floats "
                           "and no trial ran on the chip to count it on",
                           rule=Rule.WORK_ROUTED_BY_FLOATS)
    return judging.response


class OwnDevice(TypedDict):
    """What a runner's JAX holds (its ready line): the platform, the device kind, how many
    devices, and the first one's memory limit in bytes where JAX reports one."""

    platform: str
    device_kind: str
    count: int
    memory_bytes: int | None


def _own_device() -> OwnDevice:
    """What this runner's JAX holds (a device owner's chip, or the CPU): it asks its own JAX,
    never a probe (a probe could not open a chip this process holds)."""
    import jax

    device = jax.devices()[0]
    memory = None
    with contextlib.suppress(Exception):
        memory = (device.memory_stats() or {}).get("bytes_limit")
    return {"platform": device.platform, "device_kind": device.device_kind,
            "count": len(jax.devices()), "memory_bytes": memory}


def _same_outputs(a: Any, b: Any, traced: Any = None) -> None:
    """Outputs of one input set under two random fills of uninitialised memory must be equal
    bit for bit: a kernel whose outputs depend on memory it never wrote (or that looks for an
    interpreter's NaN fill) differs. The verdict names where the two runs differ and, from
    ``traced`` (the jaxpr lowered), the ranges of a kernel output its grid never writes with
    the block shape and the grid; never a value of either run."""
    import jax
    import numpy as np

    from jaxbench.evaluator.common.masks import where
    from jaxbench.evaluator.judge.coverage import uninitialised_message

    leaves = list(zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True))
    differ = []
    for i, (x, y) in enumerate(leaves):
        x, y = np.asarray(x), np.asarray(y)
        if x.tobytes() == y.tobytes():
            continue
        bits = np.dtype(f"V{x.dtype.itemsize}") if x.dtype.itemsize else x.dtype
        mask = x.view(bits) != y.view(bits) if x.ndim else np.asarray(True)
        name = f"output {i}" if len(leaves) > 1 else "the output"
        differ.append(f"{name} differs in {int(np.sum(mask))} of {x.size} elements"
                      + (f" {where(mask)}" if x.ndim else ""))
    if not differ:
        return
    raise StageFailure(Status.INCORRECT, Stage.CORRECT, uninitialised_message(differ, traced),
                       rule=Rule.UNINITIALISED)


def _answer(request: dict[str, Any], lease: Callable[[str], None]) -> JudgeResponse:
    """One request's response, whatever happened (a harness bug is reported, not raised)."""
    from jaxbench.backends import tpu_interpreter_resets

    resets = tpu_interpreter_resets()
    try:
        response = judge(JudgeRequest.from_dict(request), lease)
    except JudgeFailed as failed:
        response = failed.response
    except StageFailure as failure:  # before the judge began (the request itself)
        response = failed_response(failure)
    except (Exception, RecordError) as exc:  # noqa: BLE001 - a harness bug: report, go on
        response = JudgeResponse(status=Status.CRASHED, stage=Stage.CORRECT,
                                 rule=Rule.HARNESS,
                                 message=f"judge error: {short_error(exc, 300)}")
    if tpu_interpreter_resets() != resets:  # the interpreter failed here: a fresh runner next
        response.retire = True
    return response


PREPARE = "prepare"


def _prepare(request: dict[str, Any]) -> dict[str, Any]:
    """A chip owner's ``prepare`` op: compiles the task's own programs for the chip (the
    reference, the float32 truth, the input drawing: :func:`jaxbench.evaluator.judge.fitting
    .check`, kept for the owner's later requests) as soon as the parent knows the case, while
    the candidate is still traced. What it compiled, or why it could not, is said but decides
    nothing: the candidate's own request checks the fit again (kept, or compiled afresh)."""
    from jaxbench.evaluator.judge import fitting, xla_cache
    from jaxbench.tasks import load_task

    t0 = _perf_counter()
    try:
        task = load_task(str(request["task"]), request.get("task_file"))
        cache_on = bool(request.get("xla_cache")) and xla_cache.enable() is not None
        with xla_cache.task_side(cache_on), xla_cache.counting() as counts:
            fitting.check(task, str(request["size"]))
    except Exception as exc:  # noqa: BLE001 - said, not raised: the request itself decides
        return {"status": RAN, "op": PREPARE, "error": short_error(exc, 300),
                "seconds": round(_perf_counter() - t0, 4)}
    return {"status": RAN, "op": PREPARE, "seconds": round(_perf_counter() - t0, 4), **counts}


def serve(reply: Any) -> None:
    """Answers requests until stdin closes (several at once where the environment says so:
    :func:`serve_concurrently`)."""
    import jax

    depth = int(os.environ.get(OWNER_DEPTH, "1") or 1)
    if depth > 1:
        serve_concurrently(reply, depth)
        return
    served = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        served += 1
        request = json.loads(line)
        if request.get("op") == "modules":  # what this process has loaded (for tests)
            reply.write(json.dumps({"status": RAN, "modules": sorted(sys.modules)}) + "\n")
            reply.flush()
            continue
        if request.get("op") == PREPARE:
            reply.write(json.dumps(_prepare(request)) + "\n")
            reply.flush()
            continue
        def lease(kind: str, request: dict[str, Any] = request) -> None:
            if not request.get("lease") or kind in (CHIP, FREE):  # one request: the chip's
                return
            reply.write(json.dumps({"lease": kind}) + "\n")
            reply.flush()
            if sys.stdin.readline().strip() != "go":
                raise RuntimeError(f"the parent did not grant the {kind} device lease")

        response = _answer(request, lease)
        if served % CLEAR_CACHES_EVERY == 0:  # keep the input generators warm, memory bounded
            jax.clear_caches()
        reply.write(json.dumps(response.to_dict(), default=str) + "\n")
        reply.flush()


def serve_concurrently(reply: Any, depth: int) -> None:
    """A chip's owner taking up to ``depth`` requests at once, each line tagged with its
    request's ``id``: their reading, rules and compiles (the reference's, the truth's, the
    kernel's: XLA's compiles free the GIL) run side by side on the host's cores, while the
    chip serves one of them at a time (:meth:`_Judging.on_chip`, this process's own
    :class:`~jaxbench.evaluator.common.lease.DeviceLease` held exclusively), so a timing never
    shares the chip with anything. Waiting for the chip is told to the parent
    (``{"id", "chip_wait_s"}``): it is not the candidate's time."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import jax

    from jaxbench.evaluator.common.lease import EXCLUSIVE, DeviceLease

    chip = DeviceLease()
    writing = threading.Lock()
    counting = threading.Lock()
    state = {"in_flight": 0, "served": 0}

    def send(message: dict[str, Any]) -> None:
        with writing:
            reply.write(json.dumps(message, default=str) + "\n")
            reply.flush()

    def handle(request: dict[str, Any]) -> None:
        rid = request.pop("id")

        def lease(kind: str) -> None:
            if kind == CHIP:
                waiting = time.monotonic()
                chip.acquire(EXCLUSIVE)
                send({"id": rid, "chip_wait_s": round(time.monotonic() - waiting, 4)})
            elif kind == FREE:
                chip.release(EXCLUSIVE)
            # "exclusive" / "shared": the request already holds the chip alone (on_chip)

        try:
            if request.get("op") == PREPARE:
                send({**_prepare(request), "id": rid})
                return
            response = _answer({**request, "lease": False}, lease)
            send({**response.to_dict(), "id": rid})
        finally:
            with counting:
                state["in_flight"] -= 1
                state["served"] += 1
                clear = state["in_flight"] == 0 and state["served"] >= CLEAR_CACHES_EVERY
                if clear:  # only between requests: nothing compiles while it clears
                    state["served"] = 0
                    jax.clear_caches()

    with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="jaxbench-owner") as pool:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            if request.get("op") == "modules":
                send({"status": RAN, "modules": sorted(sys.modules), "id": request.get("id")})
                continue
            with counting:
                state["in_flight"] += 1
            pool.submit(handle, request)


def _warm_up() -> None:
    """What every request needs, loaded before the first one (while the tracer works): the
    tasks, the rules, and the hand-over's reader with JAX's Pallas modules behind it."""
    import jax
    import jax.numpy as jnp

    import jaxbench.tasks
    from jaxbench.evaluator.judge import (  # noqa: F401
        budgets,
        jaxpr_reader,
        kernel_work,
        lowering,
        rules,
        structure,
    )
    from jaxbench.evaluator.judge.gpu import race  # noqa: F401

    jaxbench.tasks.list_tasks()
    jaxpr_reader.allowed()
    jaxpr_reader.derived_classes()
    jaxpr_reader.primitive_registry()
    jax.block_until_ready(jax.jit(lambda x: x + 1)(jnp.ones((8, 128))))


def main() -> None:
    from jaxbench.evaluator.common.procs import die_with_parent, make_non_dumpable

    die_with_parent()  # a runner busy with a long module must not outlive its parent
    make_non_dumpable()  # the trial keys and inputs live here
    owner = os.environ.get("JAXBENCH_RUNNER_OWNER")
    if owner and os.getppid() != int(owner):  # the owner died before the signal was armed
        os._exit(1)
    # Responses go through a private copy of stdout; library chatter goes to stderr.
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if "--probe" in sys.argv[1:]:  # the first owner: the chip's probe, then its owner
        from jaxbench.backends.chip_probe import seen

        said = seen()  # opens the chip, once for the whole command
        reply.write("probe " + json.dumps(said) + "\n")
        reply.flush()
        if "error" in said or said["platform"] == "cpu":  # nothing to own
            return
    _warm_up()
    reply.write("ready " + json.dumps(_own_device()) + "\n")
    reply.flush()
    serve(reply)


if __name__ == "__main__":
    main()
