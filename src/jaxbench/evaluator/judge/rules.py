"""The judge's rules on exported modules (trusted side: applied to the module that runs).

Applied before anything runs: an export that breaks one is never executed.
Target export (``tpu``/``cuda``): made for exactly that platform, the task's
input and output types, no effects, at least one kernel custom call, every
custom call a kernel or free, no op outside kernels that the structure
analysis could not count, and counted work outside kernels within the budget.
Interpret export (``cpu``): the same types, no custom calls but free ones, and
the same kernel regions and, outside them, the same ops in the same order with the
same operand and result types and attributes as the target export (both come
from one trace; a swapped-in module shows here, and what is checked is what runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxbench.contract import POLICY_STATUS, Rule, Stage, StageFailure, Status
from jaxbench.evaluator.judge.pricing import FREE_CUSTOM_CALL_TARGETS
from jaxbench.evaluator.judge.structure import ModuleReport

LOWER = Stage.LOWER


def _types(avals: Sequence[Any]) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(int(d) for d in a.shape), str(a.dtype)) for a in avals]


def _contract(message: str) -> StageFailure:
    """An export breaks its contract (platform, devices, effects, inputs)."""
    return StageFailure(Status.REJECTED, LOWER, message, rule=Rule.EXPORT_CONTRACT)


def _differ(message: str) -> StageFailure:
    """The interpret-mode export is not the target export's twin."""
    return StageFailure(Status.REJECTED, LOWER, message, rule=Rule.EXPORTS_DIFFER)


def check_export(exported: Any, platform: str, in_types: list[tuple[tuple[int, ...], str]],
                 out_types: list[tuple[tuple[int, ...], str]], what: str) -> None:
    """Platform, device count, effects and signature of a deserialized export."""
    if tuple(exported.platforms) != (platform,):
        raise _contract(f"{what} export is for {tuple(exported.platforms)}, not ({platform!r},)")
    if exported.nr_devices != 1:
        raise _contract(f"{what} export spans {exported.nr_devices} devices")
    if exported.ordered_effects or exported.unordered_effects:
        raise _contract(f"{what} export has side effects (host callbacks, I/O): not allowed")
    if _types(exported.in_avals) != in_types:
        raise _contract(f"{what} export takes {_types(exported.in_avals)}, "
                        f"the task's inputs are {in_types}")
    if _types(exported.out_avals) != out_types:
        raise StageFailure(Status.INCORRECT, LOWER,
                           f"kernel returns {_types(exported.out_avals)}, the reference returns "
                           f"{out_types} (shapes and dtypes must match exactly)",
                           rule=Rule.OUTPUT_TYPES)


def _heavy_message(heavy: dict[str, int]) -> str:
    names = ", ".join(f"{k} x{v}" for k, v in sorted(heavy.items())[:4])
    return (f"outside kernels the module uses {names}: not on the allow-list of free glue or "
            "countable ops (counted as heavy); compute in Pallas instead")


def _where(line: Any) -> str:
    if not line:
        return ""
    file, number = line
    return f" at {str(file).rsplit('/', 1)[-1]}:{number}"


def _heaviest(kernels: Any) -> str:
    """The kernel file's equation that puts the most work in XLA, named with its line."""
    eqns = [e for e in (getattr(kernels, "outside_eqns", None) or []) if e[0] > 0]
    if not eqns:
        return ""
    flops, name, line = eqns[0]
    return f"; the largest is {name}{_where(line)} ({flops:.3g} FLOPs)"


def _top(ops: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3g}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:3])


def _outside_failure(rule: Rule, text: str) -> StageFailure:
    """Too much of the work runs in XLA: `no_pallas` with the rule's code (too little of it is
    a Pallas kernel), a policy refusal, never `rejected` (the status for gaming)."""
    return StageFailure(POLICY_STATUS, LOWER, f"work outside pallas_call: {text} (over the glue "
                                         "budget: a policy refusal, not a cheat)", rule=rule)


# Outside FLOPs up to this many per element of the task's inputs and outputs are glue whatever
# the kernels do (index clamps, scalar epilogues): the share rule does not look below it. (A
# kernel that only copies does no FLOPs, so any glue at all would be 100% of the module's.)
GLUE_FLOPS_PER_ELEMENT = 0.125


def check_target(report: ModuleReport, task_flops: float, max_fraction: float,
                 kernels: Any = None, work: str = "flops", elements: int = 0) -> dict[str, Any]:
    """Kernel presence, allow-lists, the data flow and the outside-work budget; returns the
    figures. ``kernels``: the kernels' own work (:class:`.kernel_work.KernelWork`; without it
    only the task's nominal FLOPs bound the outside work); ``work``: the task's currency,
    "flops" or "bytes" (a task whose work is data movement); ``elements``: of the task's
    inputs and outputs (the glue floor, :data:`GLUE_FLOPS_PER_ELEMENT`)."""
    if report.kernel_calls == 0:
        raise StageFailure(Status.NO_PALLAS, LOWER,
                           "the exported module has no Pallas kernel custom call (a kernel that "
                           "passes interpret=True itself, or plain XLA): the hot path must be a "
                           "compiled Pallas kernel", rule=Rule.NO_KERNEL)
    empty = [r.name for r in report.kernel_regions if r.call_sites and not r.kernel_calls]
    if empty:
        raise StageFailure(Status.REJECTED, LOWER,
                           f"function {empty[0]!r} is named like a kernel region but holds no "
                           "kernel custom call", rule=Rule.KERNEL_REGION_NAME)
    # Work inside kernel regions besides the kernel calls is part of the outside work.
    heavy, outside, ops = dict(report.heavy), report.outside_flops, dict(report.outside_ops)
    if heavy:
        raise StageFailure(POLICY_STATUS, LOWER, _heavy_message(heavy), rule=Rule.OUTSIDE_UNPRICED)
    inside = float(getattr(kernels, "flops", 0.0) or 0.0)
    kernel_bytes = float(getattr(kernels, "bytes", 0.0) or 0.0)
    outside_bytes = float(report.outside_bytes)
    # (keyword names: two figures are spelled like the outside-work rule codes)
    figures: dict[str, Any] = dict(
        kernel_calls=report.kernel_calls, outside_flops=outside, task_flops=task_flops,
        outside_ops=ops, custom_calls=dict(report.custom_call_targets), work=work,
        kernel_flops=inside, outside_bytes=outside_bytes, kernel_bytes=kernel_bytes)
    if kernels is not None:
        for index, what, line in getattr(kernels, "unreached", []):
            raise StageFailure(
                POLICY_STATUS, LOWER, f"output {index} is not written by any kernel: it is made by "
                f"{what}{_where(line)} in XLA, and no Pallas kernel's result reaches it (every "
                "output must come out of a kernel)", rule=Rule.OUTPUT_WITHOUT_KERNEL)
        figures["outside_share"] = outside / (outside + inside) if outside else 0.0
        glue = outside <= GLUE_FLOPS_PER_ELEMENT * elements
        if work == "flops" and not glue and figures["outside_share"] > max_fraction:
            raise _outside_failure(Rule.OUTSIDE_FLOPS, (
                f"{figures['outside_share']:.0%} of the module's FLOPs run in XLA ({_top(ops)} "
                f"FLOPs outside, {inside:.3g} in the kernels){_heaviest(kernels)}; at most "
                f"{max_fraction:.0%} may"))
        if work == "bytes":
            total = outside_bytes + kernel_bytes
            figures["outside_bytes_share"] = outside_bytes / total if total else 0.0
            if figures["outside_bytes_share"] > max_fraction:
                raise _outside_failure(Rule.OUTSIDE_BYTES, (
                    f"this task's work is data movement, and {figures['outside_bytes_share']:.0%}"
                    f" of the bytes the module writes are written by XLA ({outside_bytes:.3g} "
                    f"outside, {kernel_bytes:.3g} moved by the kernels); at most "
                    f"{max_fraction:.0%} may: gather, slice and pad inside the kernel"))
    if task_flops > 0 and outside > max_fraction * task_flops:
        raise _outside_failure(Rule.OUTSIDE_FLOPS, (
            f"{outside / task_flops:.0%} of the task's FLOPs run in XLA ({_top(ops)} FLOPs"
            f"{_heaviest(kernels)}); at most {max_fraction:.0%} may (glue like reshapes, casts "
            "and padding is free)"))
    return figures


def check_interpret(report: ModuleReport, target: ModuleReport) -> None:
    """The CPU interpret export: only free custom calls, and the target export's structure."""
    foreign = {k: v for k, v in report.custom_call_targets.items() if k not in FREE_CUSTOM_CALL_TARGETS}
    if foreign:
        raise _differ(f"interpret-mode export holds custom calls {sorted(foreign)}: not allowed")
    mine = [(r.arg_types, r.result_types) for r in report.kernel_regions]
    theirs = [(r.arg_types, r.result_types) for r in target.kernel_regions]
    if sorted(mine) != sorted(theirs):
        raise _differ(f"the interpret-mode export has {len(mine)} kernel regions, the target "
                      f"export {len(theirs)} (or their signatures differ): the two exports "
                      "must come from one trace")
    mine_ops, theirs_ops = report.outside_op_list, target.outside_op_list
    if mine_ops != theirs_ops:
        n = min(len(mine_ops), len(theirs_ops))
        i = next((i for i in range(n) if mine_ops[i] != theirs_ops[i]), n)
        raise _differ(
            "the interpret-mode export and the target export differ outside kernels at op "
            f"{i + 1} of {len(mine_ops)} and {len(theirs_ops)}: interpret-mode "
            f"{_op_text(mine_ops, i)}, target {_op_text(theirs_ops, i)}: the two exports must "
            "come from one trace (the module checked is the module run)")


def _op_text(ops: list[str], i: int) -> str:
    if i >= len(ops):
        return "(no more ops)"
    text = ops[i]
    return repr(text if len(text) <= 240 else text[:240] + "...")
