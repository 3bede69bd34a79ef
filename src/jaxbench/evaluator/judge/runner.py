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
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_perf_counter = time.perf_counter
HANDOVER = "jaxpr.pkl"  # the tracer's traced jaxprs, the one thing it hands over
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
    from jaxbench.evaluator.common.schema import StageFailure, short_error
    from jaxbench.evaluator.judge.structure import analyze

    try:
        return analyze(exported.mlir_module(), platform)
    except (ValueError, RecursionError) as exc:  # what no honest export produces
        raise StageFailure("rejected", "lower", "the exported module cannot be analysed: "
                                                f"{short_error(exc, 200)}") from None


def _triton_kernels(exported: Any) -> list[dict[str, Any]] | str:
    """The Triton kernels of the module this runner runs (name, TTIR text, warps, stages),
    their IR verified by jaxlib's Triton dialect (invalid IR: ``compile_error``); the parent
    hands them to Triton's compiler. A string says why the IR could not be read."""
    from jaxbench.evaluator.common.schema import StageFailure, short_error
    from jaxbench.evaluator.judge import triton_compile

    try:
        return triton_compile.kernels_ttir(exported.mlir_module())
    except triton_compile.InvalidTritonIR as exc:
        raise StageFailure("compile_error", "lower",
                           f"the kernel's Triton IR fails verification (XLA would reject it on "
                           f"the GPU host): {exc}") from None
    except Exception as exc:  # noqa: BLE001 - e.g. a JAX version whose TTIR we cannot read
        return f"reading the Triton IR failed: {short_error(exc, 250)}"


def _budgets(request: dict[str, Any], task: Any, platform: str,
             lowered: Any) -> tuple[str, list[dict[str, Any]]]:
    """(problem or '', figures): the on-chip memory budgets of the target modules this runner
    lowered at every size, each checked as the main one is (platform, effects, the size's
    types)."""
    import jax

    from jaxbench.evaluator.common.schema import StageFailure, short_error
    from jaxbench.evaluator.judge import budgets, rules

    for size, module in lowered.target.items():
        try:
            outs = jax.tree_util.tree_leaves(task.output_shapes(size))
            rules.check_export(module, platform, _spec_types(task.input_specs(size)),
                               _spec_types(outs), f"the size {size!r}")
        except StageFailure as failure:
            return f"memory budget at size {size!r}: {failure.message}", []
    chip = request.get("chip") or {}
    try:
        return budgets.check(dict(lowered.target), platform,
                             chip.get("tpu") or budgets.DEFAULT_TPU,
                             chip.get("gpu") or budgets.DEFAULT_GPU)
    except Exception as exc:  # noqa: BLE001 - a judge bug still fails the budget
        return f"memory budget: the judge could not compute it: {short_error(exc, 300)}", []


def judge(request: dict[str, Any], lease: Callable[[str], None] = lambda kind: None
          ) -> dict[str, Any]:
    """One evaluation's trusted work, from the tracer's jaxpr hand-over; raises StageFailure
    for a verdict other than 'ran'. ``lease(kind)`` returns once the device lease
    (:mod:`jaxbench.evaluator.parent.lease`) is held that way: the timing is the only part that holds
    it exclusively."""
    import jax

    from jaxbench.backends import device_kind, kernel_backend_of_calls
    from jaxbench.evaluator.common.arrays import pack
    from jaxbench.evaluator.common.schema import StageFailure, short_error
    from jaxbench.evaluator.judge import jaxpr_reader, kernel_work, lowering, rules
    from jaxbench.tasks import load_task

    directory = Path(request["dir"])
    # a task file's task: loaded here from the path the parent gives (never in the tracer)
    task, size, platform, mode = (load_task(request["task"], request.get("task_file")),
                                  request["size"], request["platform"], request["mode"])
    in_types = _spec_types(task.input_specs(size))
    out_types = _spec_types(jax.tree_util.tree_leaves(task.output_shapes(size)))
    response: dict[str, Any] = {"device_kind": device_kind(), "backend": jax.default_backend(),
                                "stages": {}}

    t0 = _perf_counter()
    if request.get("tokamax"):  # an allowed library the kernel imports: its primitives are known
        with contextlib.suppress(ImportError):
            import tokamax  # noqa: F401
    payload = jaxpr_reader.read((directory / HANDOVER).read_bytes())
    response["stages"]["read"] = {"seconds": round(_perf_counter() - t0, 4)}
    t0 = _perf_counter()
    lowered = lowering.lower(payload, request, task)
    response["stages"]["lower"] = {"seconds": round(_perf_counter() - t0, 4)}
    if lowered.interpret_error:
        response["stages"]["lower"]["interpret_export_error"] = lowered.interpret_error
    response["budget_problem"] = lowered.budget_problem  # the estimate's, naming the line
    response["smem_uncertain"] = lowered.smem_uncertain  # Triton's compile decides, or a warning
    t0 = _perf_counter()
    target = lowered.target[size]
    rules.check_export(target, platform, in_types, out_types, "target")
    target_report = _structure(target, platform)
    uncounted = ""
    try:
        kernels = kernel_work.count(lowered.traces[size], payload["lines"])
    except Exception as exc:  # noqa: BLE001 - the judge's own counter failing: the nominal
        kernels, uncounted = None, short_error(exc, 300)  # count alone bounds outside work
    response["structure"] = rules.check_target(target_report, task.flops(size),
                                               request.get("max_outside_flops_fraction", 0.1),
                                               kernels, task.work,
                                               _elements(in_types + out_types))
    if uncounted:
        response["structure"]["kernel_work_error"] = uncounted
    response["kernel_backend"] = kernel_backend_of_calls(response["structure"]["custom_calls"])
    # (a "cpu" target, a test's stand-in for a device, has no chip whose memory to count)
    problem, figures = _budgets(request, task, platform, lowered) if platform != "cpu" \
        else ("", [])
    if problem and not response["budget_problem"]:
        response["budget_problem"] = problem
    response["memory"] = figures
    if platform == "cuda" and mode == "interpret":  # no GPU here: check the Triton IR ourselves
        response["triton_kernels"] = _triton_kernels(target)
        # and at the other sizes whose shared memory only Triton's compiler can decide
        for other in sorted({f.get("size") for f in lowered.smem_uncertain} - {size}):
            more = _triton_kernels(lowered.target[other]) if other in lowered.target else []
            if isinstance(response["triton_kernels"], list) and isinstance(more, list):
                seen = {k["ttir"] for k in response["triton_kernels"]}
                response["triton_kernels"] += [{**k, "name": f"{k['name']}@{other}",
                                                "size": other} for k in more
                                               if k["ttir"] not in seen]
    interpret = lowered.interpret
    if interpret is not None:
        rules.check_export(interpret, "cpu", in_types, out_types, "interpret-mode")
    response["stages"]["check"] = {"seconds": round(_perf_counter() - t0, 4)}
    if request.get("save_ir"):
        response["stablehlo"] = target.mlir_module()
        response["jaxpr"] = str(lowered.traces[size])[:2_000_000]
        response["kernel_ir"] = "\n\n".join(lowered.kernel_ir)
    runs: list[tuple[str, Any, Any]] = []
    if response["budget_problem"]:
        return response  # the parent refuses it (after the structure rules above)
    t0 = _perf_counter()
    probes, info = lowering.interpreter_runs(lowered, request, task,
                                             lambda key: _inputs(task, key, size))
    response.update(info)
    runs += probes
    if probes or info:
        response["stages"]["probe"] = {"seconds": round(_perf_counter() - t0, 4)}
    if mode == "interpret" and interpret is None:
        data, layout = pack(runs)
        (directory / "outputs.npy").write_bytes(data)
        response["trials"] = layout
        return response  # no interpret lowering: the parent makes it `unverified`

    from jaxbench.evaluator.judge import tool_faults

    module = interpret if mode == "interpret" else target
    t0 = _perf_counter()
    try:
        with tool_faults.watch() as captured:
            first = _inputs(task, request["trial_keys"][0], size)
            compiled = jax.jit(module.call).lower(*first).compile()
            response["compile_s"] = round(_perf_counter() - t0, 4)
            t0 = _perf_counter()
            trials = []
            for i, key in enumerate(request["trial_keys"]):
                inputs = first if i == 0 else _inputs(task, key, size)
                trials.append((f"trial{i}", key, jax.block_until_ready(compiled(*inputs))))
            if lowered.interpret_b is not None:  # the first trial, other uninitialised memory
                other = jax.jit(lowered.interpret_b.call).lower(*first).compile()
                _same_outputs(trials[0][2], jax.block_until_ready(other(*first)))
        runs += trials
    except StageFailure:
        raise
    except Exception as exc:  # noqa: BLE001
        # A crash inside JAX's own code is not the kernel's, and nothing vouches for the outputs
        fault = tool_faults.classify_run(exc, captured, "JAX's interpret-mode run" if
                                         mode == "interpret" else "JAX's run of the module")
        if fault is not None:
            raise StageFailure("unverified", "correct", fault.describe()[:2000]) from None
        status = "crashed" if "RESOURCE_EXHAUSTED" in str(exc) else "runtime_error"
        raise StageFailure(status, "correct", short_error(exc)) from None
    response["stages"]["correct"] = {"seconds": round(_perf_counter() - t0, 4)}

    if mode == "device" and request.get("time", True):
        from jaxbench.evaluator.judge.timing import time_device, time_interleaved

        t0 = _perf_counter()
        try:
            # compiled and generated before the device is ours alone: only timing needs it so
            reference = jax.jit(task.reference).lower(*first).compile()
            sets = [first] + [_inputs(task, k, size) for k in request.get("timing_keys", [])]
            jax.block_until_ready(sets)
            waited = _perf_counter()
            lease("exclusive")
            t0 = _perf_counter()
            waited = t0 - waited
            options = dict(request.get("timing", {}))
            device_reps = int(options.pop("device_reps", 20))  # 0: wall clock only
            response["timing"] = time_interleaved(reference, compiled, sets,
                                                  perf_counter=_perf_counter, **options)
            if device_reps > 0:  # the same calls, timed on the device
                response["timing"]["device"] = time_device(
                    reference, compiled, sets, reps=device_reps, directory=str(directory / "trace"))
            if request.get("save_ir"):
                from jaxbench.evaluator.common.artifacts import compiled_artifacts

                response["compiled_artifacts"] = compiled_artifacts(compiled)
        except Exception as exc:  # noqa: BLE001
            raise StageFailure("runtime_error", "time", short_error(exc)) from None
        response["stages"]["time"] = {"seconds": round(_perf_counter() - t0, 4),
                                      "lease_wait_s": round(waited, 4)}
        lease("shared")
        t0 = _perf_counter()
        try:
            for i, key in enumerate(request.get("recheck_keys", [])):
                runs.append((f"recheck{i}", key,
                             jax.block_until_ready(compiled(*_inputs(task, key, size)))))
        except Exception as exc:  # noqa: BLE001
            raise StageFailure("runtime_error", "recheck", short_error(exc)) from None
        response["stages"]["recheck"] = {"seconds": round(_perf_counter() - t0, 4)}

    data, layout = pack(runs)
    (directory / "outputs.npy").write_bytes(data)
    response["trials"] = layout
    labelled = [(label, key) for label, key, _ in runs]
    del runs, data
    if mode == "device":  # the float32 truth on the same device (the host CPU is too slow)
        # Free what timing held on the device first: a full-size float32 reference (attention
        # scores, say) can need most of the device's memory.
        compiled = reference = sets = first = None  # noqa: F841
        jax.clear_caches()
        truth_runs = _truths(task, size, labelled)
        data, layout = pack(truth_runs)
        (directory / "truth.npy").write_bytes(data)
        response["truth"] = layout
    return response


def _same_outputs(a: Any, b: Any) -> None:
    """Outputs of one input set under two random fills of uninitialised memory must be equal
    bit for bit: a kernel whose outputs depend on memory it never wrote (or that looks for an
    interpreter's NaN fill) differs."""
    import jax
    import numpy as np

    from jaxbench.evaluator.common.schema import StageFailure

    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.tobytes() != y.tobytes():
            raise StageFailure("incorrect", "correct",
                               "the outputs depend on uninitialised memory (e.g. an output never "
                               "written, or scratch read before it is written): two runs on the "
                               "same inputs, with that memory filled with different random bits, "
                               "differ")


def _truths(task: Any, size: str, labelled: list[tuple[str, Any]]) -> list[tuple[str, Any, Any]]:
    """The reference on the inputs upcast to float32, matmuls at full float32 precision (not
    TF32), one per distinct key."""
    import jax
    import numpy as np

    from jaxbench.tasks.spec import float32_reference

    fn = float32_reference(task)
    out = []
    with jax.default_matmul_precision("highest"):
        for label, key in labelled:
            truth = fn(*_inputs(task, key, size))
            # to the host at once, so one truth at a time occupies the device
            out.append((label, key, [np.asarray(x, np.float32)
                                     for x in jax.tree_util.tree_leaves(truth)]))
            del truth
    return out


def serve(reply: Any) -> None:
    """Answers requests until stdin closes."""
    import jax

    from jaxbench.evaluator.common.schema import StageFailure, short_error

    served = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        served += 1
        request = json.loads(line)
        if request.get("op") == "modules":  # what this process has loaded (for tests)
            reply.write(json.dumps({"status": "ran", "modules": sorted(sys.modules)}) + "\n")
            reply.flush()
            continue
        def lease(kind: str, request: dict[str, Any] = request) -> None:
            if not request.get("lease"):
                return
            reply.write(json.dumps({"lease": kind}) + "\n")
            reply.flush()
            if sys.stdin.readline().strip() != "go":
                raise RuntimeError(f"the parent did not grant the {kind} device lease")

        try:
            response = {"status": "ran", **judge(request, lease)}
        except StageFailure as failure:
            response = {"status": failure.status, "stage": failure.stage,
                        "message": failure.message, "rule": failure.rule}
        except Exception as exc:  # noqa: BLE001 - a harness bug: report, keep serving
            response = {"status": "crashed", "stage": "correct",
                        "message": f"judge error: {short_error(exc, 300)}"}
        if served % CLEAR_CACHES_EVERY == 0:  # keep the input generators warm, memory bounded
            jax.clear_caches()
        reply.write(json.dumps(response, default=str) + "\n")
        reply.flush()


def _warm_up() -> None:
    """What every request needs, loaded before the first one (while the tracer works): the
    tasks, the rules, and the hand-over's reader with JAX's Pallas modules behind it."""
    import jax
    import jax.numpy as jnp

    import jaxbench.tasks
    from jaxbench.evaluator.judge import gpu_rules, jaxpr_reader, kernel_work, lowering, structure  # noqa: F401

    jaxbench.tasks.list_tasks()
    jaxpr_reader.allowed()
    jaxpr_reader.primitive_registry()
    jax.block_until_ready(jax.jit(lambda x: x + 1)(jnp.ones((8, 128))))


def main() -> None:
    from jaxbench.evaluator.common.procs import die_with_parent

    die_with_parent()  # a runner busy with a long module must not outlive its parent
    owner = os.environ.get("JAXBENCH_RUNNER_OWNER")
    if owner and os.getppid() != int(owner):  # the owner died before the signal was armed
        os._exit(1)
    # Responses go through a private copy of stdout; library chatter goes to stderr.
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _warm_up()
    reply.write("ready\n")
    reply.flush()
    serve(reply)


if __name__ == "__main__":
    main()
