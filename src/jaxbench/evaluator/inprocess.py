"""The same checks as the evaluator, in the calling process, for *trusted* kernels only.

One trace, the target and interpret-mode exports of it, the judge's structure
rules, the memory budgets at every size (the kernel traced and exported at the
task's other sizes), the GPU grid race rule, optionally Triton's compiler (GPU
kernels, where ``triton`` is installed), the interpret export run on
trial inputs (plus the TPU interpreter for TPU kernels) and the comparison with
the float32 truth: what a tracer and a runner do, without processes, sandbox or
isolation.

Used for full-size cross-lowering checks of shipped kernels, by the task
validator, and as the "bare cost" baseline of the harness-overhead benchmark.
Never use it on untrusted code: there is no sandbox here.

Command line (for kernel authors)::

    python -m jaxbench.evaluator.inprocess TASK_ID KERNEL.py [--size small|full] [--no-run]
"""

from __future__ import annotations

import argparse
import json
import time
from types import ModuleType
from typing import Any, TypedDict

import jax
import numpy as np

from jaxbench import compat
from jaxbench.backends import LOWERING_PLATFORM, reset_tpu_interpreter, tpu_check_params
from jaxbench.evaluator.judge import exporting, rules
from jaxbench.evaluator.judge.structure import analyze
from jaxbench.evaluator.parent.compare import GroundTruth, check_outputs, derive_keys, key_from_data
from jaxbench.evaluator.parent.static import check_source, declared_target
from jaxbench.evaluator.sandbox.chip import ChipDevice, as_chip
from jaxbench.tasks import get_task


def _absl_flags_parsed() -> None:
    """Tokamax reads its options through absl flags and parses ``sys.argv`` for them on first
    use, which fails on the calling program's own arguments (``--size``, pytest's): when absl is
    loaded (by a kernel's Tokamax import), mark its flags parsed, keeping their defaults."""
    import sys

    absl_flags = sys.modules.get("absl.flags")
    if absl_flags is not None and not absl_flags.FLAGS.is_parsed():
        absl_flags.FLAGS.mark_as_parsed()


def load_trusted(source: str, filename: str = "<kernel>") -> ModuleType:
    import sys

    module = ModuleType("trusted_kernel")
    module.__file__ = filename
    sys.modules["trusted_kernel"] = module  # dataclasses look their module up
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - trusted only
    return module


def _chip(target: str) -> tuple[str, str]:
    """The abstract chip a target's kernels are traced and cross-lowered for."""
    return ("tpu", exporting.CROSS_LOWERING_TPU) if target == "tpu" else \
        ("cuda", exporting.CROSS_LOWERING_GPU)


def _holds_chip_mesh(closed: Any) -> bool:
    """An equation parameter is a mesh over the chip's device, or a sharding over one (a
    ``shard_map``'s, a ``NamedSharding``'s), at any depth."""
    mesh_type = jax.sharding.Mesh

    def chip_mesh(value: Any) -> bool:
        if isinstance(value, (list, tuple)):
            return any(chip_mesh(v) for v in value)
        mesh = value if isinstance(value, mesh_type) else getattr(value, "mesh", None)
        return isinstance(mesh, mesh_type) and any(
            isinstance(d, ChipDevice) for d in getattr(mesh.devices, "flat", ()))

    return any(chip_mesh(v) for eqn in compat.walk_eqns(closed.jaxpr) for v in eqn.params.values())


def _traced(kernel: Any, specs: list[Any], target: str) -> Any:
    """The closed jaxpr of ``kernel`` traced with the chip's answers. A mesh's devices are the
    chip's, which is not attached here either: a trace holding such a mesh is taken as the judge
    reads it after the hand-over (the mesh abstract)."""
    from jaxbench.evaluator.judge.jaxpr_reader import read
    from jaxbench.evaluator.sandbox.handover import dumps

    with as_chip(*_chip(target)):  # the chip's answers, as the tracer gives them
        closed = jax.make_jaxpr(kernel)(*specs)
    if not _holds_chip_mesh(closed):
        return closed
    return read(dumps({"traced": closed}))["traces"]["traced"]


def trace_trusted(path: Any, task_id: str, size: str = "full", target: str = "gpu") -> Any:
    """The closed jaxpr of a trusted kernel file traced at ``size`` under the target's abstract
    chip: for scripts and tests that inspect shipped kernels (Triton's rules and compiler)."""
    from pathlib import Path

    path = Path(path)
    kernel = load_trusted(path.read_text(), str(path)).kernel
    specs = [jax.ShapeDtypeStruct(s.shape, jax.numpy.dtype(s.dtype))
             for s in get_task(task_id).input_specs(size)]
    return _traced(kernel, specs, target)


def export_trusted(path: Any, task_id: str, size: str = "full", target: str = "gpu") -> tuple:
    """(closed jaxpr, its export for the target's platform) of a trusted kernel file."""
    closed = trace_trusted(path, task_id, size, target)
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in closed.in_avals]
    # exporting.export names the same chip to lowering itself (CROSS_LOWERING_TPU / _GPU)
    return closed, exporting.export(closed, specs, LOWERING_PLATFORM[target])


def _budgets_and_races(kernel: Any, closed: Any, target_export: Any, task: Any, size: str,
                       target: str, platform: str) -> None:
    """What the evaluator checks besides the structure: the GPU grid race rule, and the memory
    budgets that the judge computes from the target module at every size the task defines
    (traced and exported here for the other sizes). Raises ValueError on a problem."""
    from jaxbench.evaluator.judge import budgets
    from jaxbench.evaluator.judge.gpu import race

    if target == "gpu":
        problem = race.parallel_write_conflict(closed)
        if problem:
            raise ValueError(f"GPU race rule: {problem}")
    exported = {size: target_export}
    for other in task.inputs:
        if other == size:
            continue
        specs = [jax.ShapeDtypeStruct(s.shape, jax.numpy.dtype(s.dtype))
                 for s in task.input_specs(other)]
        traced = _traced(kernel, specs, target)
        exported[other] = exporting.export(traced, specs, platform, portable=True)
    problem, _ = budgets.check(exported, platform, exporting.CROSS_LOWERING_TPU,
                               exporting.CROSS_LOWERING_GPU)
    if problem:
        raise ValueError(problem)


def _triton_compile(target_export: Any) -> None:
    """Triton's compiler on the module's Triton kernels, as the evaluator runs it (interpret
    mode, where the ``triton`` package is installed). Raises ValueError on a problem."""
    from jaxbench.evaluator.judge.gpu import triton_compile

    if not triton_compile.enabled():
        return
    kernels = triton_compile.kernels_ttir(target_export.mlir_module())
    if kernels:
        problem = triton_compile.compile_all(kernels)["problem"]
        if problem:
            raise ValueError(problem)


class InProcessCheck(TypedDict, total=False):
    """What :func:`check_in_process` found: the task, target and size, the kernel calls and
    the outside FLOPs as a fraction of the task's; with ``run``, whether every output matched
    the truth, the worst absolute error and the first mismatch's (or race's) message; the
    seconds it took."""

    task: str
    target: str
    size: str
    pallas_calls: int
    outside_flops_fraction: float
    lowered: bool
    ok: bool
    max_abs_err: float
    message: str
    seconds: float


def _second_fill(closed: Any, specs: list[Any], target: str, inputs: Any,
                 got: Any) -> dict[str, Any]:
    """The evaluator's second fill (``judge/lowering.py``, ``judge/runner.py``): where a kernel
    could read memory it never wrote, the first trial's outputs again from a module whose
    uninitialised memory holds other random bits; ``{}``, or ``ok`` False with what differs."""
    import secrets

    from jaxbench.evaluator.judge.lowering import may_read_uninitialized, random_fill

    if not may_read_uninitialized(closed):
        return {}
    with random_fill(secrets.randbits(32)):
        other = exporting.export(closed, specs, "cpu", interpret=True, target=target)
    again = jax.block_until_ready(jax.jit(other.call)(*inputs))
    differ = [i for i, (a, b) in enumerate(zip(jax.tree_util.tree_leaves(got),
                                                 jax.tree_util.tree_leaves(again), strict=True))
              if np.asarray(a).tobytes() != np.asarray(b).tobytes()]
    return {"ok": False, "message": f"[second fill] outputs {differ} depend on uninitialised "
            "memory"} if differ else {}


def check_in_process(
    source: str,
    task_id: str,
    *,
    target: str | None = None,
    size: str = "small",
    run: bool = True,
    trials: int = 1,
    tpu_interpret: bool = True,
    secret: bytes = b"in-process",
    truth: GroundTruth | None = None,
    filename: str = "<kernel>",
    triton: bool = False,
    second_fill: bool = False,
) -> InProcessCheck:
    """static, trace, lower and (with ``run``) interpret-mode correctness, in this process;
    ``triton`` adds Triton's compiler on GPU kernels (a process per kernel, as the evaluator
    does it); ``second_fill`` the evaluator's run of the first trial again with other random
    bits in the memory the kernel never wrote, where it could read such memory (outputs must
    be equal bit for bit)."""
    task = get_task(task_id)
    target = target or declared_target(source) or "tpu"
    out: InProcessCheck = {"task": task_id, "target": target, "size": size}
    t0 = time.perf_counter()
    check_source(source, filename)
    kernel = load_trusted(source, filename).kernel
    _absl_flags_parsed()
    specs = [jax.ShapeDtypeStruct(s.shape, jax.numpy.dtype(s.dtype)) for s in task.input_specs(size)]
    platform = LOWERING_PLATFORM[target]
    closed = _traced(kernel, specs, target)
    target_export = exporting.export(closed, specs, platform, portable=run)
    report = analyze(target_export.mlir_module(), platform)
    figures = rules.check_target(report, task.flops(size), 1.0)
    out["pallas_calls"] = figures["kernel_calls"]
    out["outside_flops_fraction"] = report.outside_flops / max(task.flops(size), 1.0)
    out["lowered"] = True
    if run:  # the evaluator's other checks at lower: the budgets at every size, GPU races,
        # Triton's compiler on the GPU kernels (where it is installed)
        _budgets_and_races(kernel, closed, target_export, task, size, target, platform)
        if target == "gpu" and triton:
            _triton_compile(target_export)
        interpret = exporting.export(closed, specs, "cpu", interpret=True, target=target)
        rules.check_interpret(analyze(interpret.mlir_module(), "cpu"), report)
        truth = truth or GroundTruth()
        expected = task.output_shapes(size)
        out["ok"], out["max_abs_err"] = True, 0.0
        runs = [("generic", k) for k in derive_keys(secret, task_id, size, trials, "trial")]
        if target == "tpu" and tpu_interpret:
            runs.append(("tpu", runs[0][1]))
        call = jax.jit(interpret.call)
        first: Any = None
        for kind, key in runs:
            inputs = task.make_inputs(key_from_data(key), size)
            try:
                if kind == "tpu":
                    params = compat.tpu_interpret_params(uninitialized_memory="nan",
                                                         **tpu_check_params(key[0]))
                    fn = jax.jit(compat.jaxpr_as_fun(exporting.with_interpret(
                        exporting.on_judged_chip(closed, target), params)))
                    got = jax.block_until_ready(fn(*inputs))
                    if compat.tpu_races_found():
                        out.update({"ok": False, "message": "[tpu interpreter] data race detected"})
                        break
                else:
                    got = jax.block_until_ready(call(*inputs))
                    first = (inputs, got) if first is None else first
            finally:
                if kind == "tpu":
                    reset_tpu_interpreter()
            leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(got)]
            verdict = check_outputs(leaves, expected, truth(task, size, key), task.atol, task.rtol)
            out["max_abs_err"] = max(out["max_abs_err"], verdict.max_abs_err or 0.0)
            if not verdict.ok:
                out.update({"ok": False, "message": f"[{kind} interpreter] {verdict.message}"})
                break
        if second_fill and out["ok"] and first is not None:
            out.update(_second_fill(closed, specs, target, *first))
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task")
    parser.add_argument("kernel")
    parser.add_argument("--size", default="small")
    parser.add_argument("--target", default=None)
    parser.add_argument("--no-run", action="store_true", help="trace and cross-lower only")
    parser.add_argument("--trials", type=int, default=1)
    args = parser.parse_args()
    with open(args.kernel) as f:
        source = f.read()
    print(json.dumps(check_in_process(source, args.task, target=args.target, size=args.size,
                                      run=not args.no_run, trials=args.trials,
                                      filename=args.kernel), indent=1))


if __name__ == "__main__":
    main()
