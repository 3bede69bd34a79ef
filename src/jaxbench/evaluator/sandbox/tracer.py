"""The untrusted side: the only process that ever runs a candidate's Python.

Forked by the fork server (:mod:`jaxbench.evaluator.sandbox.zygote`, which has
imported the harness already) or started as ``python -m
jaxbench.evaluator.sandbox.tracer DIR`` by the parent, with a minimal
environment, no accelerator (``JAX_PLATFORMS=cpu``) and ``DIR`` its private
directory. While still single-threaded it enters fresh user, network
and mount namespaces, imports what it needs, hides the host's shared directories
and OS-isolates itself (Landlock: reads limited to the Python installation,
writes to ``DIR`` only, no TCP, no signals or ptrace outside; no-new-privileges;
parent-death signal). Then it warms JAX up, reports its isolation in its
start-up line and waits for one job on stdin.

The job holds abstract input shapes only, never real inputs. The order of
:func:`run_job` is the promise: the candidate is loaded and ``kernel`` traced at
the evaluated size (the one jaxpr the evaluated modules come from) and at every
other size; the trace rules and the untrusted checks run (the GPU grid race
rule, the memory budgets; they may only add failures); then the process is
sealed and the exports are made — the target module at every size and
(interpret mode) the CPU interpret-mode module — the TPU interpreter's check
runs, and the files are written, ``status.json`` last with the job's token.
That is all the parent takes from here, besides failure text; nothing here is
believed when it claims success.
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


def import_harness() -> bool:
    """Imports everything the harness needs later (afterwards a tracer can read the Python
    installation only, not jaxbench's own source tree, where expert kernels live); starts no
    thread, so a fork server can call it before forking. True when Pallas' Triton backend
    imports."""
    import jax  # noqa: F401
    import jax.numpy  # noqa: F401
    import numpy  # noqa: F401
    from jax.experimental import pallas  # noqa: F401
    from jax.experimental.pallas import tpu  # noqa: F401

    import jaxbench.tasks
    from jaxbench import compat  # noqa: F401
    from jaxbench.backends import interpret_mode  # noqa: F401
    from jaxbench.evaluator import arrays, artifacts, result  # noqa: F401
    from jaxbench.evaluator.judge import (  # noqa: F401
        exporting,
        gpu_rules,
        memory_rules,
        structure,  # noqa: F401 - the probe's heavy-glue check
        triton_rules,
    )
    from jaxbench.evaluator.sandbox import chip, guards, integrity  # noqa: F401

    with_triton = True
    try:
        from jax.experimental.pallas import triton  # noqa: F401
    except ImportError:  # pragma: no cover - a jaxlib without the GPU pieces
        with_triton = False
    jaxbench.tasks.list_tasks()  # imports every task module
    return with_triton


def _isolate(directory: Path) -> tuple[str, dict[str, Any]]:
    """Namespaces first (single-threaded), imports (none left to do in a forked tracer), then
    Landlock before any JAX thread."""
    from jaxbench.evaluator.sandbox import isolation

    namespaces = isolation.enter_namespaces()
    with_triton = import_harness()
    source_root = str(Path(__file__).resolve().parents[2])  # the jaxbench package
    readable = isolation.python_read_roots(exclude=[source_root])
    # Shared directories holding other processes' Unix sockets are hidden (a mount namespace
    # of its own) before Landlock, which forbids mounting.
    hidden = isolation.hide_host(readable, [str(directory)])
    record = isolation.restrict(readable, [str(directory)])
    record["triton"] = with_triton
    record.update(namespaces=namespaces, hidden=hidden["hidden"])
    return isolation.describe(record, namespaces, hidden=hidden), record


def _warm_up() -> None:
    """Traces and exports a tiny kernel before any job, while the spare waits: Pallas loads
    lowering code and registers some of its lowering rules on first use, which must happen
    before the rule snapshot (after it, they would read as rules the candidate changed). The
    interpreters' shared compile of each simulated core's share is installed here too, so the
    integrity snapshot holds it as the harness's own."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from jaxbench import compat
    from jaxbench.evaluator.judge import exporting

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    compat.compile_simulated_cores_once()
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
        path = self._dir / name
        try:  # whatever candidate code left at this name (a link, a FIFO, a forged file) goes
            os.unlink(path)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
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


# Installed libraries a kernel names in its imports, imported before lock-down and before the
# rule snapshot: Tokamax (its autotuner imports multiprocessing, which the sandbox refuses once
# candidate code is on the stack) and JAX's own modules (JAX's Pallas ops, whose Mosaic GPU
# helpers import faulthandler; jax.experimental.sparse & co., which define primitives: defined
# before the snapshot, they are JAX's, not the candidate's).
_PRELOADED_ROOTS = ("tokamax", "jax")


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
    if isinstance(exc, OSError) and _hidden(getattr(exc, "filename", None)):
        return "rejected", stage, ("sandbox (OS isolation): the host's shared directories are "
                                   f"hidden from kernels: {short_error(exc, 300)}")
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


def _hidden(path: Any) -> bool:
    """Whether ``path`` lies beneath a host directory the tracer hides (a kernel reaching there
    finds an empty directory: that is the sandbox, not the kernel's own error)."""
    from jaxbench.evaluator.sandbox.isolation import HIDDEN_DIRS

    if not isinstance(path, str) or not path.startswith("/"):
        return False
    return any(path == d or path.startswith(d + "/") for d in HIDDEN_DIRS)


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


def _memory_budgets(job: dict[str, Any], trace: Any, target: str,
                    size: str) -> tuple[str, list[dict[str, Any]]]:
    """On-chip memory of every kernel of one trace (at task size ``size``): add-only here, the
    judge computes the budgets that decide from the exported modules."""
    from jaxbench.evaluator.judge import memory_rules
    from jaxbench.evaluator.judge.triton_rules import location

    kind = job.get("tpu_device_kind", "TPU v6 lite")
    gpu_kind = job.get("gpu_device_kind", "NVIDIA H200")
    locate = location(job.get("source"), job.get("filename", "<kernel>"))
    return memory_rules.check(trace, target, size, kind, gpu_kind, locate)


def _debug_run(outbox: Outbox, job: dict[str, Any], closed: Any, jit: Any, jaxpr_as_fun: Any,
               with_interpret: Any, block: Any, nonce: Any) -> None:
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
    outbox.status.update(status="traced", nonce=nonce)
    outbox.flush()
    return None


def _seal(bound: dict[str, Any]) -> None:
    """Before the exports are made: no candidate code may act from here on. Signal handlers
    are reset and timers cancelled (a handler runs whatever it was given), the cyclic garbage
    collector is off (finalizers), and the audit hook ends the process if anything audited
    happens with candidate code on the stack."""
    signal = bound["signal"]
    for timer in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
        bound["setitimer"](timer, 0, 0)
    for number in range(1, signal.NSIG):
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            handler = bound["getsignal"](number)
        except (ValueError, OSError):
            continue
        if callable(handler):  # a Python-level handler: nothing of it may run any more
            bound["set_handler"](number, int(signal.SIG_IGN))
    bound["gc"].disable()
    bound["gc"].callbacks.clear()
    bound["seal"]()


def _heavy_glue(exported: Any, platform: str) -> str:
    """What the judge will refuse as heavy in the target module (e.g. a loop whose trip count
    cannot be read), '' when nothing: the TPU interpreter's check is skipped for such a module
    (it could run forever), and the parent accepts the skip only if the judge then refuses."""
    from jaxbench.evaluator.judge.structure import analyze

    try:
        report = analyze(exported.mlir_module(), platform)
    except Exception:  # noqa: BLE001 - the judge reports unreadable modules itself
        return ""
    return ", ".join(sorted(report.heavy)[:3]) and (
        f"the module holds work the judge refuses as heavy ({', '.join(sorted(report.heavy)[:3])})")


def _rule_problem(rules: Any, primitives: Any) -> str:
    unknown = rules.unknown_primitives(primitives)
    if unknown:
        return (f"the kernel uses primitives JAX does not define ({', '.join(unknown[:4])}): "
                "kernels may not define primitives or lowering rules (the module checked for "
                "the chip and the module run could then compute different things)")
    changed = rules.changed_rules()
    if changed:
        return (f"the kernel changed JAX's rules for primitives ({changed}): kernels may not "
                "register lowering, interpreter or discharge rules (the module checked for the "
                "chip and the module run could then compute different things)")
    return ""


def run_job(job: dict[str, Any], directory: Path, isolation_level: str) -> None:
    """One evaluation. The order is the promise: every piece of candidate code (the import,
    the trace at every size, anything those leave behind) runs first; the untrusted checks
    come next; then the process is sealed and the exports are made and written last, with
    status.json the very last file, and the process exits."""
    import gc
    import signal

    import jax
    import numpy as np

    from jaxbench import compat
    from jaxbench.backends import tpu_check_params
    from jaxbench.evaluator.judge import exporting, gpu_rules
    from jaxbench.evaluator.result import short_error
    from jaxbench.evaluator.sandbox import guards, integrity
    from jaxbench.evaluator.sandbox.chip import as_chip
    from jaxbench.evaluator.sandbox.isolation import set_rlimits

    # The parent's token for this job, kept in this frame only (candidate code can read no
    # frames, heap or process memory): a report that says "traced" without it was not written
    # by this function's last step, so candidate code cannot end the process early with a
    # report of its own.
    nonce = job.pop("nonce", None)
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
    platform, target, size = job["platform"], job["target"], job["size"]
    filename = job.get("filename", "<kernel>")
    _preload_libraries(job["source"])
    # Everything called after candidate code has run is bound now, before it loads.
    make_jaxpr, jit, block = jax.make_jaxpr, jax.jit, jax.block_until_ready
    export, with_interpret, jaxpr_as_fun = exporting.export, exporting.with_interpret, \
        compat.jaxpr_as_fun
    import _signal  # the C functions: the guards replace the Python-level ones

    bound = {"signal": signal, "seal": guards.seal, "gc": gc, "setitimer": _signal.setitimer,
             "getsignal": _signal.getsignal, "set_handler": _signal.signal}
    kind = job.get("tpu_device_kind", exporting.CROSS_LOWERING_TPU)
    gpu_kind = job.get("gpu_device_kind", exporting.CROSS_LOWERING_GPU)
    chip = (lambda: as_chip("tpu", kind)) if target == "tpu" else (lambda: as_chip("cuda", gpu_kind))
    outbox.flush()
    guards.disarm_unaudited()
    snapshot = integrity.snapshot()
    rules = integrity.RuleSnapshot()
    guards.lock_down(directory)
    kept: list[Any] = []  # candidate objects stay alive until the process exits (no finalizers)

    def patched(stage: str) -> bool:
        """Harness code or JAX's rule tables replaced since the snapshot (re-checked after
        every stage, since code the candidate left behind, e.g. a finalizer, can run at any
        point)."""
        found = integrity.changed(snapshot) or guards.state_problem(directory, filename)
        if found:
            outbox.fail("rejected", stage, f"the kernel patched harness code: {found}")
            return True
        problem = _rule_problem(rules, [])
        if problem:
            outbox.fail("rejected", stage, problem)
        return bool(problem)

    scanned_kernels = 0  # pallas_calls in the trace scanned last

    def scanned(trace: Any, stage: str, where: str = "") -> bool:
        """The trace-level rules; True when one failed (and was reported)."""
        nonlocal scanned_kernels
        found = exporting.scan(trace)
        scanned_kernels = found.kernels
        problem = ""
        if found.callbacks and not (debug and set(found.callbacks) == {"debug_callback"}):
            problem = (f"host callback ({', '.join(sorted(set(found.callbacks)))}) in the "
                       "kernel: all work must run on the device")
        elif found.own_interpret:
            problem = (f"the kernel passes interpret={found.own_interpret[0]} to pallas_call "
                       "itself: kernels never choose interpret mode, the harness does (on a "
                       "device it would time interpreter code)")
        elif found.platform_dependent:
            problem = ("platform-dependent code (lax.platform_dependent) in the kernel: the "
                       "module checked on the CPU and the module run on the chip would differ")
        else:
            problem = _rule_problem(rules, found.primitives.values())
        if not problem:
            objects = exporting.candidate_parameters(trace, guards.own_code)
            if objects:
                problem = (f"the kernel passes objects of its own classes as parameters of JAX "
                           f"operations ({'; '.join(objects)}): lowering reads them, so they "
                           "could differ between the module checked and the module run; use "
                           "JAX's own parameter classes")
        if problem:
            outbox.fail("rejected", stage, where + problem)
            return True
        if found.kernels == 0:
            outbox.fail("no_pallas", stage,
                        where + "no pallas_call in the traced kernel: the hot path must be Pallas")
            return True
        return False

    debug = bool(job.get("debug"))  # `jaxbench eval --debug`: its verdict never counts

    # -- trace: the one trace the evaluated modules come from ---------------------------------
    t0 = _perf_counter()
    guards.candidate_file(filename)
    try:
        # The kernel asks about its hardware as it loads and traces: the chip answers.
        with chip():
            module = _load_candidate(job["source"], filename)
            kept.append(module)
            closed = make_jaxpr(module.kernel)(*specs)
        kept.append(closed)
    except Exception as exc:  # noqa: BLE001 - any candidate error is a verdict
        return _fail(outbox, job, exc, "compile_error", "trace")
    if patched("trace") or scanned(closed, "trace"):
        return None
    outbox.stage("trace", _perf_counter() - t0, kernels=scanned_kernels)
    if debug:
        return _debug_run(outbox, job, closed, jit, jaxpr_as_fun, with_interpret, block, nonce)

    # -- the other sizes: traced now, so that no candidate code runs after the exports -------
    t0 = _perf_counter()
    traces = {size: closed}
    for other, other_specs in job.get("size_specs", {}).items():
        if other == size:
            continue
        avals = [jax.ShapeDtypeStruct(tuple(shape), jax.numpy.dtype(dtype))
                 for shape, dtype in other_specs]
        try:
            with chip():
                traces[other] = make_jaxpr(module.kernel)(*avals)
        except Exception as exc:  # noqa: BLE001 - tracing at another size failed
            return _fail(outbox, job, exc, "compile_error", "lower", f"tracing at size {other!r}: ")
        kept.append(traces[other])
        if patched("lower") or scanned(traces[other], "lower", f"at size {other!r}: "):
            return None
    outbox.stage("sizes", _perf_counter() - t0)

    # -- untrusted checks on the traces (add-only) -------------------------------------------
    t0 = _perf_counter()
    if target == "gpu" and job.get("gpu_race_rule", True):
        problem = gpu_rules.parallel_write_conflict(closed)
        if problem:
            return outbox.fail("incorrect", "lower", f"GPU race rule: {problem}")
    budget_problem, budgets = "", []
    for name in [size] + [s for s in traces if s != size]:
        problem, found = _memory_budgets(job, traces[name], target, name)
        budgets += found
        if problem:
            budget_problem = problem
            break
    outbox.status["memory"] = budgets
    if budget_problem:  # reported by the parent after the judge's structure rules
        outbox.status["budget_problem"] = budget_problem
    if patched("lower"):
        return None

    # -- exports: sealed first; made in memory; written last, status.json the very last -------
    t0 = _perf_counter()
    _seal(bound)
    files: dict[str, bytes] = {}
    info: dict[str, Any] = {"platform": platform}
    ir: dict[str, Any] = {}
    for name in [size] + [s for s in traces if s != size]:
        try:
            from jaxbench.evaluator.artifacts import capture_kernel_ir

            with capture_kernel_ir() as kernel_ir:
                exported = export(traces[name], specs if name == size else [
                    jax.ShapeDtypeStruct(tuple(shape), jax.numpy.dtype(dtype))
                    for shape, dtype in job["size_specs"][name]], platform,
                    tpu_device_kind=kind, gpu_device_kind=gpu_kind,
                    portable=bool(job.get("interpret_export")))
            files[TARGET if name == size else exporting.size_export(name)] = exported.serialize()
            if name == size:
                target_module = exported
            if name == size and job.get("save_ir"):
                ir = {"jaxpr": str(closed), "kernel_ir": "\n\n".join(kernel_ir)}
        except Exception as exc:  # noqa: BLE001
            hint = ""
            if target == "gpu" and "Cannot lower pallas_call on platform" in str(exc):
                hint = ("GPU kernels must pass compiler_params=plgpu.CompilerParams(...) from "
                        "jax.experimental.pallas.triton (the Triton backend); ")
            outbox.status["frames"] = candidate_frames(exc, filename, job["source"])
            status, stage, message = _verdict(exc, "compile_error", "lower")
            if status == "compile_error":
                at = "" if name == size else f" at size {name!r}"
                message = f"lowering for {target}{at}: {hint}{short_error(exc)}"
                if budget_problem:  # the rule names the tensor and the line; lowering may not
                    message = f"{budget_problem}; {message}"
            return outbox.fail(status, stage, message)
    if job.get("interpret_export"):
        try:
            files[INTERPRET] = export(closed, specs, "cpu", interpret=True).serialize()
        except Exception as exc:  # noqa: BLE001 - the parent makes this `unverified`
            info["interpret_export_error"] = short_error(exc, 300)
    if patched("lower"):
        return None
    outbox.stage("lower", _perf_counter() - t0, **info)

    # -- the interpreters' checks (add-only), sealed too: JAX's interpreter on the jaxpr -------
    # The TPU interpreter (races, NaN-filled memory) for every TPU kernel; the Mosaic GPU
    # interpreter for a GPU kernel that has no callback-free interpret export (plgpu.kernel):
    # then nothing trusted can run it and this run can still find it wrong.
    t0 = _perf_counter()
    tpu_key = job.get("tpu_interpreter_key")
    heavy = _heavy_glue(target_module, platform) if tpu_key else ""
    runs: list[tuple[str, list[int], Any]] = []
    probes = []
    if budget_problem:
        pass
    elif tpu_key is not None and heavy:  # the judge refuses it; running it could take forever
        outbox.status["tpu_interpreter"] = f"skipped: {heavy}"
    elif tpu_key is not None:
        probes.append(("tpu_interpreter", tpu_key, lambda: compat.tpu_interpret_params(
            uninitialized_memory="nan", **tpu_check_params(tpu_key[0]))))
    gpu_key = job.get("gpu_interpreter_key")
    if gpu_key is not None and not budget_problem and "interpret_export_error" in info:
        if compat.gpu_interpreter() is None:
            outbox.status["gpu_interpreter"] = (f"unavailable: JAX {jax.__version__} has no "
                                                "Mosaic GPU interpreter (JAX 0.11 and later do)")
        else:
            probes.append(("gpu_interpreter", gpu_key,
                           lambda: compat.gpu_interpreter(detect_races=True)))
    for label, probe, make_params in probes:
        try:
            from jaxbench.tasks import get_task

            task = get_task(job["task"])
            fn = jit(jaxpr_as_fun(with_interpret(closed, make_params())))
            inputs = task.make_inputs(jax.random.wrap_key_data(np.asarray(probe, np.uint32)),
                                      size)
            try:
                runs.append((label, probe, block(fn(*inputs))))
                outbox.status[f"{label}_race"] = (compat.tpu_races_found() if label ==
                                                  "tpu_interpreter" else compat.gpu_races_found())
                outbox.status[label] = "ran"
            except NotImplementedError as exc:
                if guards.raised_by_untrusted_code(exc):  # not JAX's interpreter saying so
                    raise
                outbox.status[label] = f"unsupported: {short_error(exc, 200)}"
        except Exception as exc:  # noqa: BLE001
            what = "untrusted interpreter: " if label == "tpu_interpreter" else \
                "untrusted Mosaic GPU interpreter: "
            return _fail(outbox, job, exc, "runtime_error", "correct", what)
    if probes:
        outbox.stage("probe", _perf_counter() - t0)
    if patched("correct"):
        return None
    if ir:
        files[IR] = json.dumps(ir).encode()
    if runs:
        _save_outputs(outbox, runs)
    for name, data in files.items():
        outbox.write(name, data)
    outbox.status.update(status="traced", nonce=nonce)
    outbox.flush()
    return None


def main(directory: Path | None = None) -> None:
    """A tracer's life: isolation, warm-up, the handshake, one job, exit. ``directory`` is its
    private directory (``sys.argv[1]`` when started as a command; the fork server passes it)."""
    directory = Path(directory or sys.argv[1]).resolve()
    isolation_level, record = _isolate(directory)
    from jaxbench.evaluator.sandbox import guards

    guards.install_hook()
    _warm_up()
    # The handshake, one line written before any job (so before any candidate code): the
    # parent takes the isolation level from here (and checks what it can in /proc), never
    # from files the candidate could rewrite.
    handshake = {"isolation": isolation_level, "namespaces": record.get("namespaces", []),
                 "hidden": record.get("hidden", []),
                 "no_new_privs": bool(record.get("no_new_privs"))}
    sys.stdout.write("ready " + json.dumps(handshake) + "\n")
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
