"""The task validator: is each task a meaningful, fairly-toleranced benchmark problem?

``validate_task(task)`` draws the task's inputs from several seeds and runs four checks
on its reference (``jaxbench validate`` runs them over a suite):

``finite``
    The float32 ground truth and the bf16 XLA reference are finite on every seed.
``non_constant``
    The output is not (near-)constant. Flagged when every ``|out| < 0.01`` on every
    seed, or when no output element moves by 0.01 across seeds: ``max over elements of
    (max - min over seeds) < 0.01``. Checked on the float32 ground truth, per output leaf.
``inputs_matter``
    Every input changes the output. For input *i* and each of the first
    ``perturb_seeds`` seeds, the task's ``make_inputs`` is called with a second,
    independent key and only input *i* of that draw replaces the base draw's (the other
    inputs are kept). The input matters when, on some trial, the float32 output moves by
    more than ``1e-3 * (max |base output| + 1e-6)`` (max abs difference over elements;
    the threshold is > 0, so an exactly unchanged output never passes). Integer inputs
    (labels, page tables, lengths, group sizes) are perturbed the same way, through
    ``make_inputs``.

    Correlated inputs: substituting one alone can make an invalid combination (cu_q_lens
    whose query spans exceed kv_lens, ...). When the output with the lone substitution
    is non-finite or the reference raises, the input is perturbed jointly with its group
    instead: the group in ``task.meta["validate_together"]`` (a list of lists of input
    names) that holds it, else all of the task's ``custom`` inputs (the ones its
    ``make_inputs`` draws together); the float inputs are kept. The report notes it.
    An input that comes out identical from every key (e.g. ``cu_q_lens = arange`` in
    decode attention, a fixed ``num_seqs``) cannot be perturbed and is reported as
    ``fixed``, not flagged.

    Inert inputs: an input the operator cancels mathematically (a bias added before a norm
    that subtracts the mean over the same axis) may be declared in
    ``task.meta["inert_inputs"]`` (``{name: reason}``); it is still measured, reported as
    inert and not flagged when it does not matter, and flagged when the declaration is
    wrong (it does change the output). Undeclared, it is flagged: a kernel may skip it.
``tolerance``
    Tolerance calibration: on every seed the bf16 XLA reference (for tasks whose inputs are
    all float32 and whose reference has a matrix product: the reference on inputs rounded to
    TF32, an upper bound on what XLA's default matmul precision on a GPU computes) passes the
    evaluator's own
    check (:func:`jaxbench.evaluator.parent.compare.check_outputs`) against the float32 ground
    truth, and so does the ground truth rounded to the output dtype (a kernel that
    accumulates more precisely must never fail). Reported as the worst
    ``|bf16 - truth| / (atol + rtol * |truth|)`` over elements and seeds (<= 1 passes).
    Flagged too when an output of 0 would pass the tolerance at 20 % or more of the non-zero
    ground-truth elements (the tolerance is too loose for the output's scale: softmax
    probabilities of ~1/N under atol 1e-2).

Warnings (shown, not flagged): an input whose replacement keeps the output within the
task's tolerance on every trial ("ignorable": a kernel that ignored it would still pass
the correctness check); an ``atol`` of 20 % or more of the truth's median non-zero |output|
("loose atol": an error of that share of a typical output passes, although a zero does not).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbench.evaluator.parent.compare import GroundTruth, check_outputs, key_from_data
from jaxbench.tasks import Task, get_task

CONSTANT_ABS = 0.01      # "all |out| < 0.01"
CONSTANT_SPREAD = 0.01   # "no element moves by 0.01 across seeds"
ZERO_PASS_SHARE = 0.2  # flag a tolerance under which 0 passes for >= 20 % of non-zero outputs
LOOSE_ATOL_SHARE = 0.2  # warn when atol is >= 20 % of the truth's median non-zero |output|
MATTER_REL = 1e-3        # an input matters if the output moves > 1e-3 * (max|out| + 1e-6)
_BASE_STREAM = 0x6A78    # key data [stream, seed]: base draws
_ALT_STREAM = 0x616C74   # alternative draws for the perturbation check

CHECKS = ("finite", "non_constant", "inputs_matter", "tolerance", "work")
# XLA's optimised reference doing fewer FLOPs than this per byte it moves is data movement: the
# task must declare ``work="bytes"`` (and a task that declares it must be one). Measured: the one
# data-movement task, l1_embedding_lookup, at 0.0002 FLOPs per byte; every other at >= 0.08.
# (XLA's CPU cost analysis counts a bf16 gather's converts as FLOPs, 0.5 per byte: a bf16
# data-movement task would need its declaration checked by hand.)
DATA_MOVEMENT_FLOPS_PER_BYTE = 0.01


@dataclass
class Check:
    ok: bool
    note: str = ""
    value: float | None = None


@dataclass
class InputResult:
    name: str
    mode: str             # "alone", "joint" (with its group), "fixed" (not randomised), "error"
    change: float         # max abs change of the output over the trials
    threshold: float
    matters: bool
    detectable: bool      # some trial's changed output fails the task's tolerance check
    group: list[str] = field(default_factory=list)
    note: str = ""
    inert: str = ""       # the task's reason for declaring it inert (meta["inert_inputs"])


@dataclass
class TaskReport:
    task: str
    size: str
    seeds: int
    finite: Check
    non_constant: Check
    inputs_matter: Check
    tolerance: Check
    inputs: list[InputResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    work: Check = field(default_factory=lambda: Check(True, "not checked"))

    @property
    def flags(self) -> list[str]:
        return [f"{name}: {c.note}" for name in CHECKS
                if not (c := getattr(self, name)).ok and c.note != "not checked"]

    @property
    def flagged(self) -> bool:
        return any(not getattr(self, name).ok for name in CHECKS)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["flagged"] = self.flagged
        d["flags"] = self.flags
        return d


def _finite(leaves: list[np.ndarray]) -> bool:
    return all(bool(np.isfinite(x).all()) for x in leaves)


def _max_abs(leaves: list[np.ndarray]) -> float:
    return max((float(np.abs(x).max()) for x in leaves if x.size), default=0.0)


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))


def _err_over_tol(outputs: list[np.ndarray], truth: list[np.ndarray], atol: float, rtol: float) -> float:
    """Worst |out - truth| / (atol + rtol |truth|): the margin behind check_outputs' verdict."""
    worst = 0.0
    for out, ref in zip(outputs, truth, strict=True):
        if out.size:
            ratio = np.abs(out.astype(np.float32) - ref) / (atol + rtol * np.abs(ref))
            worst = max(worst, float(np.nan_to_num(ratio, nan=np.inf).max()))
    return worst


def error_report(task: Task, size: str, seeds: int, exc: BaseException) -> TaskReport:
    """A flagged report for a task whose validation raised (its reference or make_inputs broke)."""
    message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    failed = Check(False, f"validation raised {message[:200]}")
    return TaskReport(task.id, size, seeds, failed, Check(False, "not checked"),
                      Check(False, "not checked"), Check(False, "not checked"))


def _zero_passes(truth: list[np.ndarray], atol: float, rtol: float) -> float:
    """Share of the non-zero ground-truth elements where an output of 0 would be accepted."""
    nonzero = passed = 0
    for ref in truth:
        mask = ref != 0
        nonzero += int(mask.sum())
        passed += int((np.abs(ref[mask]) <= atol + rtol * np.abs(ref[mask])).sum())
    return passed / nonzero if nonzero else 0.0


def loose_atol(truths: list[list[np.ndarray]], atol: float) -> str | None:
    """A warning when ``atol`` is large against the truth's typical output (its median non-zero
    |output| over every seed and leaf): an error of that share of a typical output then passes,
    although a zero may still fail (``ZERO_PASS_SHARE`` flags that). None when it is not."""
    values = [np.abs(leaf[leaf != 0]).ravel() for seed in truths for leaf in seed
              if np.issubdtype(leaf.dtype, np.floating)]
    values = [v[np.isfinite(v)] for v in values]
    if not values or not sum(v.size for v in values):
        return None
    typical = float(np.median(np.concatenate(values)))
    if typical <= 0 or atol < LOOSE_ATOL_SHARE * typical:
        return None
    return (f"loose atol: atol {atol:g} is {atol / typical:.0%} of the reference's typical |output| "
            f"(median {typical:.3g}), so an error of that size passes; consider atol "
            f"{_round_down(0.05 * typical):g} or inputs of a larger scale")


def _round_down(x: float) -> float:
    """``x`` rounded down to one significant digit (a tolerance to suggest)."""
    if x <= 0:
        return 0.0
    step = 10.0 ** math.floor(math.log10(x))
    return math.floor(x / step + 1e-9) * step


def _float32_task(task: Task, size: str) -> bool:
    """A task whose floating inputs are all float32 (the PallasBench suite) and whose reference
    has a matrix product (which XLA's default precision on a GPU computes from TF32 inputs;
    everything else it computes in float32, exactly like the ground truth)."""
    specs = task.input_specs(size)
    floats = [s for s in specs if jnp.issubdtype(jnp.dtype(s.dtype), jnp.floating)]
    if not floats or any(jnp.dtype(s.dtype) != jnp.float32 for s in floats):
        return False
    avals = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in specs]
    return _has_product(jax.make_jaxpr(task.reference)(*avals).jaxpr)


def _has_product(jaxpr: Any) -> bool:
    from jaxbench.evaluator.common.jaxprs import sub_jaxprs

    return any(e.primitive.name in ("dot_general", "conv_general_dilated")
               or any(_has_product(sub) for sub in sub_jaxprs(e.params)) for e in jaxpr.eqns)


def _tf32_inputs(inputs: Any) -> tuple:
    """float32 inputs rounded to TF32 (10 explicit mantissa bits, to nearest): what a GPU's
    tensor cores read when XLA runs a float32 dot at its default precision. Applied to every
    input, it bounds the error of a default-precision XLA reference from above."""
    out = []
    for x in inputs:
        a = np.asarray(x)
        if a.dtype == np.float32:
            bits = a.view(np.uint32).astype(np.uint64)
            bits = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)
            a = np.where(np.isfinite(a), bits.view(np.float32), a)
            out.append(jnp.asarray(a))
        else:
            out.append(x)
    return tuple(out)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def validate_one(task: Task | str, size: str, seeds: int) -> TaskReport:
    """One task's report, or its error report when its validation raises (one broken task must
    not hide the others' results): the job an executor runs per task. ``task`` may be an ID,
    which a Ray node looks up in its own registry."""
    task = get_task(task) if isinstance(task, str) else task
    try:
        return validate_task(task, size=size, seeds=seeds)
    except Exception as exc:  # noqa: BLE001 - reported as a flagged task
        return error_report(task, size, seeds, exc)


def validate_task(task: Task, size: str = "small", seeds: int = 5,
                  perturb_seeds: int = 2) -> TaskReport:
    """Runs the four checks (see the module docstring) on ``task`` at ``size``."""
    if seeds < 2:
        raise ValueError("validate_task needs at least 2 seeds (the spread check compares them)")
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf outputs are reported, not warned
        return _validate(task, size, seeds, perturb_seeds)


def _validate(task: Task, size: str, seeds: int, perturb_seeds: int) -> TaskReport:
    started = time.monotonic()
    task.dims(size)  # a KeyError naming the sizes for an unknown size
    # The evaluator's own float32 ground truth (a fresh instance: its compiled reference is per
    # task ID), of the inputs drawn here; the perturbation check reuses its compiled program.
    gt = GroundTruth()
    bf16 = jax.jit(task.reference)

    def f32(*inputs: Any) -> list[np.ndarray]:
        return gt.of_inputs(task, inputs)

    base_inputs, truths = [], []
    finite_notes: list[str] = []
    bf16_fail = precise_fail = ""
    zero_share = 0.0
    worst_ratio = 0.0
    float32_task = _float32_task(task, size)
    for s in range(seeds):
        key = [_BASE_STREAM, s]
        inputs = task.make_inputs(key_from_data(key), size)
        truth = f32(*inputs)
        # float32 tasks: the XLA reference as a GPU computes it by default (TF32 dot inputs)
        ref_tree = bf16(*(_tf32_inputs(inputs) if float32_task else inputs))
        ref_raw = [np.asarray(x) for x in jax.tree_util.tree_leaves(ref_tree)]
        ref = [x.astype(np.float32) for x in ref_raw]
        base_inputs.append(inputs)
        truths.append(truth)
        if not _finite(truth):
            finite_notes.append(f"seed {s}: float32 ground truth has NaN/Inf")
        if not _finite(ref):
            finite_notes.append(f"seed {s}: bf16 reference has NaN/Inf")
        worst_ratio = max(worst_ratio, _err_over_tol(ref, truth, task.atol, task.rtol))
        verdict = check_outputs(ref_raw, ref_tree, truth, task.atol, task.rtol)
        if not verdict.ok and not bf16_fail:
            bf16_fail = f"seed {s}: bf16 reference fails: {verdict.message}"
        rounded = [np.asarray(jnp.asarray(t).astype(r.dtype)) for t, r in zip(truth, ref_raw, strict=True)]
        precise = check_outputs(rounded, ref_tree, truth, task.atol, task.rtol)
        if not precise.ok and not precise_fail:
            precise_fail = f"seed {s}: the truth rounded to the output dtype fails: {precise.message}"
        zero_share = max(zero_share, _zero_passes(truth, task.atol, task.rtol))

    tol_notes = [n for n in (bf16_fail, precise_fail) if n]
    tiny = all(float(np.abs(np.stack([t[j] for t in truths])).max(initial=0.0)) < CONSTANT_ABS
               for j in range(len(truths[0])))
    if zero_share >= ZERO_PASS_SHARE and not tiny:  # a tiny output is non_constant's flag
        tol_notes.append(f"a zero would pass atol {task.atol:g} + rtol {task.rtol:g} at "
                         f"{zero_share:.0%} of the non-zero outputs: the tolerance is too loose "
                         "for the output's scale")
    finite = Check(not finite_notes, "; ".join(finite_notes[:2]))
    reference = "TF32-input reference" if float32_task else "bf16 reference"
    tolerance = Check(not tol_notes, "; ".join(tol_notes) if tol_notes else
                      f"worst err/tol {worst_ratio:.3g} of the {reference} (atol {task.atol:g}, "
                      f"rtol {task.rtol:g})", worst_ratio)

    # non-constant, per output leaf, on the float32 ground truth
    const_notes = []
    spread_min = None
    for j in range(len(truths[0])):
        stack = np.stack([t[j] for t in truths])
        name = f"output {j}" if len(truths[0]) > 1 else "output"
        amax = float(np.abs(stack).max()) if stack.size else 0.0
        spread = float((stack.max(axis=0) - stack.min(axis=0)).max()) if stack.size else 0.0
        spread_min = spread if spread_min is None else min(spread_min, spread)
        if amax < CONSTANT_ABS:
            const_notes.append(f"{name}: all |out| < {CONSTANT_ABS:g} (max |out| {amax:.3g})")
        elif spread < CONSTANT_SPREAD:
            const_notes.append(f"{name}: no element moves by {CONSTANT_SPREAD:g} across "
                               f"{seeds} seeds (max spread {spread:.3g})")
    non_constant = Check(not const_notes, "; ".join(const_notes) or
                         f"max spread across seeds {_fmt(spread_min)}", spread_min)

    inputs = _perturbation(task, size, f32, base_inputs, truths, min(perturb_seeds, seeds))
    dead = [f"{r.name} does not change the output "
            f"({r.note or f'max change {r.change:.3g} <= {r.threshold:.3g}'})"
            for r in inputs if not r.matters and (not r.inert or r.mode == "error")]
    dead += [f"{r.name} is declared inert but changes the output by {r.change:.3g}"
             for r in inputs if r.matters and r.inert]
    inputs_matter = Check(not dead, "; ".join(dead) or ", ".join(
        f"{r.name}:{'inert' if r.inert else r.mode}" for r in inputs if r.mode != "alone" or r.inert))
    warnings = [f"ignorable {r.name}: replacing it moves the output by at most {r.change:.3g}, "
                f"within tolerance" for r in inputs if r.matters and not r.detectable and not r.inert]
    loose = None if tiny or not tolerance.ok else loose_atol(truths, task.atol)
    if loose:
        warnings.insert(0, loose)
    return TaskReport(task.id, size, seeds, finite, non_constant, inputs_matter, tolerance,
                      inputs, warnings, round(time.monotonic() - started, 2),
                      work=check_work(task, size))


def xla_cost(task: Task, size: str) -> tuple[float, float]:
    """(FLOPs including transcendentals, bytes accessed) of XLA's optimised reference at
    ``size``, from the compiled program's own cost analysis."""
    specs = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in task.input_specs(size)]
    cost = jax.jit(task.reference).lower(*specs).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return (float(cost.get("flops", 0.0)) + float(cost.get("transcendentals", 0.0)),
            float(cost.get("bytes accessed", 0.0)))


def check_work(task: Task, size: str) -> Check:
    """The task's currency against what XLA's optimised reference does: a reference of under
    :data:`DATA_MOVEMENT_FLOPS_PER_BYTE` moves data, and the outside-work rule must count its
    bytes (``work="bytes"``); the ratio of XLA's FLOPs to the nominal count is the value."""
    flops, moved = xla_cost(task, size)
    per_byte = flops / moved if moved else 0.0
    nominal = task.flops(size)
    ratio = flops / nominal if nominal else None
    note = (f"XLA: {flops:.3g} FLOPs, {per_byte:.3g} per byte; "
            f"{_fmt(ratio)}x the nominal {nominal:.3g}")
    movement = per_byte < DATA_MOVEMENT_FLOPS_PER_BYTE
    if movement and task.work != "bytes":
        return Check(False, f"{note}: the reference moves data; declare work='bytes'", ratio)
    if not movement and task.work == "bytes":
        return Check(False, f"{note}: declared work='bytes' but the reference computes", ratio)
    return Check(True, note, ratio)


def _perturbation(task: Task, size: str, f32: Any, base_inputs: list[tuple],
                  truths: list[list[np.ndarray]], trials: int) -> list[InputResult]:
    specs = task.input_specs(size)
    names = [s.name for s in specs]
    declared = [list(g) for g in task.meta.get("validate_together", [])]
    unknown = sorted({n for g in declared for n in g} - set(names))
    if unknown:
        raise ValueError(f"task {task.id}: meta['validate_together'] names unknown inputs {unknown}")
    inert = task.meta.get("inert_inputs", {})
    inert = dict(inert) if isinstance(inert, dict) else {n: "declared inert" for n in inert}
    unknown = sorted(set(inert) - set(names))
    if unknown:
        raise ValueError(f"task {task.id}: meta['inert_inputs'] names unknown inputs {unknown}")
    custom = [s.name for s in specs if s.init == "custom"]
    alts = [task.make_inputs(key_from_data([_ALT_STREAM, s]), size) for s in range(trials)]
    shapes = [[jax.ShapeDtypeStruct(x.shape, x.dtype) for x in truth] for truth in truths]

    def measure(members: list[str]) -> tuple[float, float, bool] | None:
        """Max output change, threshold, and whether any trial leaves the tolerance band."""
        idx = {names.index(n) for n in members}
        change, threshold, detectable = 0.0, 0.0, False
        for t in range(trials):
            inputs = [alts[t][k] if k in idx else x for k, x in enumerate(base_inputs[t])]
            try:
                out = f32(*inputs)
            except Exception:  # an invalid combination the reference rejects
                return None
            if not _finite(out):
                return None
            truth = truths[t]
            threshold = max(threshold, MATTER_REL * (_max_abs(truth) + 1e-6))
            change = max(change, max((float(np.abs(o - r).max())
                                      for o, r in zip(out, truth, strict=True) if o.size), default=0.0))
            detectable = detectable or not check_outputs(out, shapes[t], truth, task.atol, task.rtol).ok
        return change, threshold, detectable

    results = []
    for i, name in enumerate(names):
        group = next((g for g in declared if name in g), None)
        if group is None and all(_same(alts[t][i], base_inputs[t][i]) for t in range(trials)):
            results.append(InputResult(name, "fixed", 0.0, 0.0, True, True,
                                       note="identical from every key: not randomised"))
            continue
        members, mode = (group, "joint") if group else ([name], "alone")
        measured = measure(members)
        if measured is None and mode == "alone" and name in custom and len(custom) > 1:
            members, mode = custom, "joint"  # correlated custom inputs: redraw them together
            measured = measure(members)
        if measured is None:
            results.append(InputResult(
                name, "error", 0.0, 0.0, False, False, members,
                f"perturbing {'+'.join(members)} gives a non-finite output or an error; "
                f"declare meta['validate_together']"))
            continue
        change, threshold, detectable = measured
        results.append(InputResult(name, mode, change, threshold, change > threshold, detectable,
                                   members if mode == "joint" else [], inert=inert.get(name, "")))
    return results
