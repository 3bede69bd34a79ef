"""The untrusted side: the only process that ever runs a candidate's Python.

Started as ``python -m jaxbench.evaluator.sandbox.tracer DIR`` by the parent,
with a minimal environment, no accelerator (``JAX_PLATFORMS=cpu``) and ``DIR``
its private directory. While still single-threaded it enters fresh user and
network namespaces, imports what it needs, and OS-isolates itself (Landlock:
reads limited to the Python installation, writes to ``DIR`` only, no TCP, no
signals or ptrace outside; no-new-privileges; parent-death signal). Then it
warms JAX up and waits for one job on stdin.

The job holds abstract input shapes only, never real inputs. The candidate is
loaded and ``kernel`` traced once; from that one jaxpr the process exports the
target-platform module and (interpret mode) the CPU interpret-mode module, and
writes their serialized bytes to ``DIR``. That is all the parent takes from
here, besides failure text. Optional checks that need the jaxpr (the TPU
interpreter's race check, the GPU grid race rule) run here too: they may only
add failures, since nothing here is believed when it claims success.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_perf_counter = time.perf_counter
_exit = os._exit

# Files this process writes into its directory (the parent reads them with O_NOFOLLOW).
STATUS, TARGET, INTERPRET, PROBE, IR = ("status.json", "target.export", "interpret.export",
                                        "probe.npy", "ir.json")


def _isolate(directory: Path) -> tuple[str, dict[str, Any]]:
    """Namespaces first (single-threaded), imports, then Landlock before any JAX thread."""
    from jaxbench.evaluator.sandbox import isolation

    namespaces = isolation.enter_namespaces()
    # Everything the harness needs later is imported now: afterwards this process can read
    # the Python installation only, not jaxbench's own source tree (expert kernels live there).
    import jax  # noqa: F401
    import jax.numpy  # noqa: F401
    import numpy  # noqa: F401
    from jax.experimental import pallas  # noqa: F401
    from jax.experimental.pallas import tpu  # noqa: F401

    import jaxbench.tasks
    from jaxbench import compat  # noqa: F401
    from jaxbench.backends import interpret_mode  # noqa: F401
    from jaxbench.evaluator import arrays, artifacts, result  # noqa: F401
    from jaxbench.evaluator.sandbox import exporting, gpu_rules, guards, integrity, memory_rules, triton_rules  # noqa: F401

    with_triton = True
    try:
        from jax.experimental.pallas import triton  # noqa: F401
    except ImportError:  # pragma: no cover - a jaxlib without the GPU pieces
        with_triton = False
    jaxbench.tasks.list_tasks()  # imports every task module
    source_root = str(Path(jaxbench.__file__).parent)
    record = isolation.restrict(isolation.python_read_roots(exclude=[source_root]),
                                [str(directory)])
    record["triton"] = with_triton
    return isolation.describe(record, namespaces), record


def _warm_up() -> None:
    """Traces and exports a tiny kernel (loads Pallas' lowering code before any job)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from jaxbench.evaluator.sandbox import exporting

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    spec = jax.ShapeDtypeStruct((8, 128), jnp.float32)
    closed = jax.make_jaxpr(lambda a: pl.pallas_call(copy, out_shape=a)(a))(spec)
    for platform, interpret in (("tpu", False), ("cpu", True)):
        try:  # a JAX without one of the lowerings still serves the other targets
            exporting.export(closed, [spec], platform, interpret=interpret).serialize()
        except Exception:  # noqa: BLE001
            pass


class Outbox:
    """Files for the parent, through handles opened before the candidate loads."""

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._dumps = json.dumps
        self.status: dict[str, Any] = {"status": "running", "stages": {}, "info": {}}

    def write(self, name: str, data: bytes) -> None:
        fd = os.open(self._dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def flush(self) -> None:
        self.write(STATUS, self._dumps(self.status, default=str).encode())

    def stage(self, name: str, seconds: float, **info: Any) -> None:
        self.status["stages"][name] = {"seconds": round(seconds, 4), **info}
        self.flush()

    def fail(self, status: str, stage: str, message: str) -> None:
        self.status.update(status=status, stage=stage, message=message)
        self.flush()


def _load_candidate(source: str, filename: str) -> Any:
    from types import ModuleType

    module = ModuleType("candidate")
    module.__file__ = filename
    sys.modules["candidate"] = module  # dataclasses and pickling-free helpers look modules up
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - under the sandbox
    if not callable(module.__dict__.get("kernel")):
        raise AttributeError("the module defines no callable `kernel`")
    return module


# Installed kernel libraries whose import needs what the sandbox refuses once candidate code
# is on the stack (Tokamax's autotuner imports multiprocessing): imported before lock-down.
_PRELOADED_ROOTS = ("tokamax",)


def _preload_libraries(source: str) -> None:
    import ast
    import importlib

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    for name in sorted(names):
        if name.split(".")[0] in _PRELOADED_ROOTS:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - not installed, or a name rather than a module
                pass


def _verdict(exc: BaseException, status: str, stage: str, prefix: str = "") -> tuple[str, str, str]:
    """(status, stage, message) for an exception raised while candidate code was involved."""
    from jaxbench.evaluator.result import short_error
    from jaxbench.evaluator.sandbox.guards import SandboxViolation

    if isinstance(exc, SandboxViolation):
        return "rejected", stage, f"sandbox: {exc}"
    if isinstance(exc, PermissionError) or "PERMISSION_DENIED" in str(exc):
        return "rejected", stage, f"sandbox (OS isolation): {short_error(exc, 300)}"
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc):
        return "crashed", stage, f"{prefix}out of memory (limit reached): {short_error(exc, 300)}"
    message = prefix + short_error(exc)
    if type(exc).__name__ in ("TracerArrayConversionError", "ConcretizationTypeError",
                              "TracerBoolConversionError", "TracerIntegerConversionError"):
        message = ("kernels are traced under jax.jit: host NumPy/Python on input values is not "
                   f"allowed ({message})")
    if "custom calls whose targets have no compatibility guarantees" in str(exc) or \
            "callback" in str(exc).lower() and "export" in str(exc).lower():
        return "rejected", stage, ("host callback in the kernel: it cannot be exported, and all "
                                   f"work must run on the device ({short_error(exc, 200)})")
    return status, stage, message


def candidate_frames(exc: BaseException, filename: str, source: str, limit: int = 6) -> list[str]:
    """``file:line in function: code`` for the frames of the candidate's own file that an
    exception (and the exceptions it was raised from) passed through, innermost last. Called
    with no candidate code on the stack (the guards allow reading frames then)."""
    import traceback

    lines = source.splitlines()
    name = os.path.basename(filename)
    found: list[str] = []
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen and len(seen) < 8:
        seen.add(id(error))
        chain = []
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            code = frame.f_code
            if code.co_filename == filename:
                text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
                chain.append(f"{name}:{lineno} in {code.co_name}: {text}"[:240])
        found = chain + found  # causes come before the error they led to
        error = error.__cause__ or error.__context__
    unique = list(dict.fromkeys(found))
    return unique[-limit:]


def _fail(outbox: Outbox, job: dict[str, Any], exc: BaseException, status: str, stage: str,
          prefix: str = "") -> None:
    """Reports a failure caused by an exception, with the candidate's frames it passed through."""
    outbox.status["frames"] = candidate_frames(exc, job.get("filename", "<kernel>"), job["source"])
    outbox.fail(*_verdict(exc, status, stage, prefix))


def _save_outputs(outbox: Outbox, runs: list[tuple[str, list[int], Any]]) -> None:
    """Outputs of untrusted runs (probe / fallback) for the parent, which validates them."""
    from jaxbench.evaluator.arrays import pack

    data, layout = pack(runs)
    outbox.write(PROBE, data)
    outbox.status["probe"] = layout


def _memory_budgets(job: dict[str, Any], closed: Any, make_jaxpr: Any, kernel: Any,
                    target: str, only: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """On-chip memory of every kernel at every size the task defines (abstract traces of the
    other sizes: cheap, and only ever a source of failures); ``only`` limits it to one size."""
    import jax

    from jaxbench import compat
    from jaxbench.evaluator.sandbox import memory_rules

    kind = job.get("tpu_device_kind", "TPU v6 lite")
    figures: list[dict[str, Any]] = []
    for size, specs in job.get("size_specs", {}).items():
        if only is not None and size != only:
            continue
        if size == job["size"]:
            trace = closed
        else:
            avals = [jax.ShapeDtypeStruct(tuple(shape), jax.numpy.dtype(dtype))
                     for shape, dtype in specs]
            platform = "tpu" if target == "tpu" else "cuda"
            device = kind if target == "tpu" else job.get("gpu_device_kind",
                                                          "NVIDIA H200")
            with compat.abstract_device(platform, device):
                trace = make_jaxpr(kernel)(*avals)
        from jaxbench.evaluator.sandbox.triton_rules import location

        gpu_kind = job.get("gpu_device_kind", "NVIDIA H200")
        locate = location(job.get("source"), job.get("filename", "<kernel>"))
        problem, found = memory_rules.check(trace, target, size, kind, gpu_kind, locate)
        figures += found
        if problem:
            return problem, figures
    return "", figures


def _debug_run(outbox: Outbox, job: dict[str, Any], closed: Any, jit: Any, jaxpr_as_fun: Any,
               with_interpret: Any, block: Any) -> None:
    """Debug mode: the traced kernel runs here, in interpret mode, so that its
    ``jax.debug.print`` output reaches this process's stdout (the parent shows its end). No
    export is made and the trusted judge is not involved: the parent marks the result as a
    debug run that does not count."""
    import jax
    import numpy as np

    from jaxbench.tasks import get_task

    t0 = _perf_counter()
    runs: list[tuple[str, list[int], Any]] = []
    try:
        task = get_task(job["task"])
        fn = jit(jaxpr_as_fun(with_interpret(closed, True)))
        for i, key in enumerate(job["fallback_keys"]):
            print(f"--- debug run {i}: the kernel's output follows ---", flush=True)
            inputs = task.make_inputs(jax.random.wrap_key_data(np.asarray(key, np.uint32)),
                                      job["size"])
            runs.append((f"untrusted{i}", key, block(fn(*inputs))))
            sys.stdout.flush()
    except Exception as exc:  # noqa: BLE001
        return _fail(outbox, job, exc, "runtime_error", "correct", "debug run: ")
    _save_outputs(outbox, runs)
    outbox.stage("probe", _perf_counter() - t0)
    outbox.status["status"] = "traced"
    outbox.flush()
    return None


def run_job(job: dict[str, Any], directory: Path, isolation_level: str) -> None:
    import jax
    import numpy as np

    from jaxbench import compat
    from jaxbench.backends import tpu_check_params
    from jaxbench.evaluator.result import short_error
    from jaxbench.evaluator.sandbox import exporting, gpu_rules, guards, integrity
    from jaxbench.evaluator.sandbox.isolation import set_rlimits

    outbox = Outbox(directory)
    outbox.status["isolation"] = isolation_level
    scratch = directory / "scratch"
    scratch.mkdir(exist_ok=True)
    os.chdir(scratch)
    os.environ["TMPDIR"] = str(scratch)
    import tempfile

    tempfile.tempdir = str(scratch)
    set_rlimits(job.get("memory_bytes"), job.get("file_bytes", 1 << 30))
    specs = [jax.ShapeDtypeStruct(tuple(shape), jax.numpy.dtype(dtype))
             for shape, dtype in job["specs"]]
    platform, target = job["platform"], job["target"]
    _preload_libraries(job["source"])
    # Everything called after candidate code has run is bound now, before it loads.
    make_jaxpr, jit, block = jax.make_jaxpr, jax.jit, jax.block_until_ready
    export, with_interpret, jaxpr_as_fun = exporting.export, exporting.with_interpret, \
        compat.jaxpr_as_fun
    kind = job.get("tpu_device_kind", exporting.CROSS_LOWERING_TPU)
    gpu_kind = job.get("gpu_device_kind", exporting.CROSS_LOWERING_GPU)
    chip = (lambda: compat.abstract_device("tpu", kind)) if target == "tpu" else \
        (lambda: compat.abstract_device("cuda", gpu_kind))
    outbox.flush()
    guards.disarm_unaudited()
    snapshot = integrity.snapshot()
    guards.lock_down(directory)

    def patched(stage: str) -> bool:
        """Harness code replaced since the snapshot (re-checked after every stage, since code
        the candidate left behind, e.g. a finalizer, can run at any point)."""
        found = integrity.changed(snapshot)
        if found:
            outbox.fail("rejected", stage, f"the kernel patched harness code: {found}")
        return bool(found)

    # -- trace: one trace; both exports come from it ----------------------------------------
    t0 = _perf_counter()
    try:
        module = _load_candidate(job["source"], job.get("filename", "<kernel>"))
        # Library kernels ask the current device for its TPU generation at trace time.
        with chip():
            closed = make_jaxpr(module.kernel)(*specs)
    except Exception as exc:  # noqa: BLE001 - any candidate error is a verdict
        return _fail(outbox, job, exc, "compile_error", "trace")
    if patched("trace"):
        return None
    found = exporting.scan(closed)
    outbox.stage("trace", _perf_counter() - t0, kernels=found.kernels)
    debug = bool(job.get("debug"))  # `jaxbench eval --debug`: its verdict never counts
    if found.callbacks and not (debug and set(found.callbacks) == {"debug_callback"}):
        return outbox.fail("rejected", "trace",
                           f"host callback ({', '.join(sorted(set(found.callbacks)))}) in the "
                           "kernel: all work must run on the device")
    if found.kernels == 0:
        return outbox.fail("no_pallas", "trace",
                           "no pallas_call in the traced kernel: the hot path must be Pallas")
    if found.own_interpret:
        return outbox.fail("rejected", "trace",
                           f"the kernel passes interpret={found.own_interpret[0]} to pallas_call "
                           "itself: kernels never choose interpret mode, the harness does "
                           "(on a device it would time interpreter code)")
    if found.platform_dependent:
        return outbox.fail("rejected", "trace",
                           "platform-dependent code (lax.platform_dependent) in the kernel: the "
                           "module checked on the CPU and the module run on the chip would differ")

    if debug:
        return _debug_run(outbox, job, closed, jit, jaxpr_as_fun, with_interpret, block)

    # -- lower: the exports ---------------------------------------------------------------------
    t0 = _perf_counter()
    if target == "gpu" and job.get("gpu_race_rule", True):
        problem = gpu_rules.parallel_write_conflict(closed)
        if problem:
            return outbox.fail("incorrect", "lower", f"GPU race rule: {problem}")
    # The budget at the evaluated size, from the one trace; reported by the parent after the
    # judge's structure rules (and nothing is run on the untrusted side when it fails).
    budget_problem, budgets = _memory_budgets(job, closed, make_jaxpr, module.kernel, target,
                                              only=job["size"])
    if budget_problem:
        outbox.status.update(budget_problem=budget_problem, memory=budgets)
    ir: dict[str, Any] = {}
    try:
        from jaxbench.evaluator.artifacts import capture_kernel_ir

        with capture_kernel_ir() as kernel_ir:
            exported = export(closed, specs, platform, tpu_device_kind=kind,
                              gpu_device_kind=gpu_kind,
                              portable=bool(job.get("interpret_export")))
        outbox.write(TARGET, exported.serialize())
        if job.get("save_ir"):
            ir = {"jaxpr": str(closed), "kernel_ir": "\n\n".join(kernel_ir)}
    except Exception as exc:  # noqa: BLE001
        hint = ""
        if target == "gpu" and "Cannot lower pallas_call on platform" in str(exc):
            hint = ("GPU kernels must pass compiler_params=plgpu.CompilerParams(...) from "
                    "jax.experimental.pallas.triton (the Triton backend); ")
        outbox.status["frames"] = candidate_frames(exc, job.get("filename", "<kernel>"),
                                                   job["source"])
        status, stage, message = _verdict(exc, "compile_error", "lower")
        if status == "compile_error":
            message = f"lowering for {target}: {hint}{short_error(exc)}"
            if budget_problem:  # the rule names the tensor and the line; the lowering may not
                message = f"{budget_problem}; {message}"
        return outbox.fail(status, stage, message)
    info: dict[str, Any] = {"platform": platform}
    if job.get("interpret_export"):
        try:
            outbox.write(INTERPRET, export(closed, specs, "cpu", interpret=True).serialize())
        except Exception as exc:  # noqa: BLE001 - judged here instead (marked untrusted)
            info["interpret_export_error"] = short_error(exc, 300)
    if ir:
        outbox.write(IR, json.dumps(ir).encode())
    if patched("lower"):
        return None
    outbox.stage("lower", _perf_counter() - t0, **info)

    # -- untrusted runs: add-only checks, or the fallback when no interpret export exists ----
    runs: list[tuple[str, list[int], Any]] = []
    task = None
    t0 = _perf_counter()
    try:
        if budget_problem:
            pass
        elif "interpret_export_error" in info and job.get("fallback_keys"):
            from jaxbench.tasks import get_task

            task = get_task(job["task"])
            fn = jit(jaxpr_as_fun(with_interpret(closed, True)))
            for i, key in enumerate(job["fallback_keys"]):
                inputs = task.make_inputs(jax.random.wrap_key_data(np.asarray(key, np.uint32)),
                                          job["size"])
                runs.append((f"untrusted{i}", key, block(fn(*inputs))))
        probe = None if budget_problem else job.get("tpu_interpreter_key")
        if probe is not None:
            from jaxbench.tasks import get_task

            task = task or get_task(job["task"])
            params = compat.tpu_interpret_params(uninitialized_memory="nan",
                                                 **tpu_check_params(probe[0]))
            fn = jit(jaxpr_as_fun(with_interpret(closed, params)))
            inputs = task.make_inputs(jax.random.wrap_key_data(np.asarray(probe, np.uint32)),
                                      job["size"])
            try:
                runs.append(("tpu_interpreter", probe, block(fn(*inputs))))
                outbox.status["tpu_interpreter_race"] = compat.tpu_races_found()
                outbox.status["tpu_interpreter"] = "ran"
            except NotImplementedError as exc:
                if guards.raised_by_untrusted_code(exc):  # not JAX's interpreter saying so
                    raise
                outbox.status["tpu_interpreter"] = f"unsupported: {short_error(exc, 200)}"
    except Exception as exc:  # noqa: BLE001
        return _fail(outbox, job, exc, "runtime_error", "correct", "untrusted interpreter: ")
    if patched("correct"):
        return None
    if runs:
        _save_outputs(outbox, runs)
        outbox.stage("probe", _perf_counter() - t0)

    # -- memory budgets at the other sizes (after the exports: further traces run candidate
    # code, and a kernel could make them differ from the exported trace: they predict) --------
    if not budget_problem:
        others = [s for s in job.get("size_specs", {}) if s != job["size"]]
        for size in others:
            try:
                problem, found = _memory_budgets(job, closed, make_jaxpr, module.kernel, target,
                                                 only=size)
            except Exception as exc:  # noqa: BLE001 - tracing at another size failed
                return _fail(outbox, job, exc, "compile_error", "lower",
                             f"tracing at size {size!r}: ")
            budgets += found
            if problem:  # the parent applies it after the judge's structure rules
                outbox.status["budget_problem"] = problem
                break
        outbox.status["memory"] = budgets
    if patched("lower"):
        return None
    outbox.status["status"] = "traced"
    outbox.flush()


def main() -> None:
    directory = Path(sys.argv[1]).resolve()
    isolation_level, _ = _isolate(directory)
    from jaxbench.evaluator.sandbox import guards

    guards.install_hook()
    _warm_up()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    raw = sys.stdin.read()
    if not raw.strip():
        _exit(0)  # a spare that was never used
    job = json.loads(raw)
    try:
        run_job(job, directory, isolation_level)
    except BaseException as exc:  # a harness bug, or the candidate broke the harness
        import traceback

        traceback.print_exc()
        try:
            Outbox(directory).fail("crashed", "trace", f"tracer failed: {type(exc).__name__}: "
                                                       f"{str(exc)[:300]}")
        finally:
            _exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
    _exit(0)  # skip interpreter teardown the candidate may have hooked


if __name__ == "__main__":
    main()
