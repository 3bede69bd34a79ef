"""The untrusted side: the only process that ever runs a candidate's Python.

Forked by the fork server (:mod:`jaxbench.evaluator.sandbox.zygote`, which has
imported the harness already) or started as ``python -m
jaxbench.evaluator.sandbox.tracer DIR`` (with ``-P``) by the parent, with a minimal
environment, no accelerator (``JAX_PLATFORMS=cpu``) and ``DIR`` its private
directory. While still single-threaded it enters fresh user, network
and mount namespaces, imports what it needs, hides the host's shared directories
and OS-isolates itself (Landlock: reads limited to the Python installation,
writes to ``DIR`` only, no TCP, no signals or ptrace outside; no-new-privileges;
parent-death signal). Then it warms JAX up, reports its isolation in its
start-up line and waits for one job on stdin.

Before the handshake it also imports everything a kernel may import (:func:`preload_allowed`),
opens the files it will hand over, and seals itself (:mod:`jaxbench.evaluator.sandbox.seal`, a
seccomp filter: no file opened, created or executed, no socket, no other process, on every
host, Landlock or not); the handshake says whether the seal holds.

The job holds abstract input shapes only, never real inputs. The order of
:func:`run_job`: the candidate is loaded and ``kernel`` traced at the evaluated
size and at every other size the task defines; the in-process guards and the
integrity checks run after each stage (they may only add failures); then the
process is sealed and the traced jaxprs are handed over
(:mod:`jaxbench.evaluator.sandbox.handover`: ``jaxpr.pkl``), ``status.json``
last. The hand-over is the one artefact the parent passes on, to the trusted
runner, which reads it as hostile data and derives every module and check from
it; a failure reported here is believed (it can only hurt the candidate),
nothing else is.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from jaxbench.contract import TRACED, Rule, Stage, Status, TracerJob, TracerStatus

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from jax.extend.core import ClosedJaxpr

    from jaxbench.evaluator.sandbox.isolation import Restrictions

_perf_counter = time.perf_counter
_exit = os._exit

# Files this process writes into its directory (the parent reads them with O_NOFOLLOW).
STATUS, HANDOVER, PROBE = "status.json", "jaxpr.pkl", "probe.npy"
# Its steps after the trace, as its status names them (the parent reads SIZES and HANDOVER).
SIZES, HANDOVER_STEP, PROBE_STEP = "sizes", "handover", "probe"


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
    from jaxbench import compat, contract  # noqa: F401
    from jaxbench.backends import interpret_mode  # noqa: F401
    from jaxbench.evaluator.common import arrays, artifacts, errors, jaxpr_format, jaxprs, procs  # noqa: F401
    from jaxbench.evaluator.sandbox import chip, guards, handover, integrity  # noqa: F401

    with_triton = True
    try:
        from jax.experimental.pallas import triton  # noqa: F401
    except ImportError:  # pragma: no cover - a jaxlib without the GPU pieces
        with_triton = False
    jaxbench.tasks.list_tasks()  # imports every task module
    preload_allowed()
    return with_triton


# What kernels may import (the static policy's allow-list, ALLOWED_IMPORT_ROOTS), imported
# before the seal: after it no file can be opened, so a module not loaded by then cannot be
# imported (a compile_error naming it, :func:`_blocked_import`). JAX is walked whole (its public
# modules: JAX's own Pallas ops, jax.experimental.*), jaxlib's Python modules (JAX imports some
# lazily), Tokamax's tree and einops too; not tests, not ``jax._src`` but Pallas' (kernels may
# not import it; the public modules import what they need of it).
#
# NumPy's subpackages it may load on first use, beside the allowed roots themselves
_PRELOADED_NUMPY = ("numpy.linalg", "numpy.fft", "numpy.random", "numpy.polynomial", "numpy.ma",
                    "numpy.lib",
                    # what installed libraries import when they run (Tokamax reads its package
                    # data through importlib.resources)
                    "importlib.readers", "importlib.resources", "importlib.resources.readers",
                    "importlib.metadata")
# (package, its subpackages to leave out): walked whole
_PRELOADED_TREES = (("jax", ("_src", "tests", "test", "jax2tf", "collect_profile")),
                    # what JAX's own code imports lazily (MLIR dialects are namespace packages,
                    # which the walk does not enter: named here)
                    ("jaxlib", ("tests",)), ("jaxlib.mlir", ()), ("jaxlib.mlir.dialects", ()),
                    # Pallas' own tree: its interpreters load lazily (a debug run uses them)
                    ("jax._src.pallas", ("tests",)),
                    # (not einops' support for other frameworks: it imports them, torch alone
                    # 1 s, and einops loads it only for their tensors, which no JAX kernel has)
                    ("einops", ("tests", "_torch_specific", "torch", "tensorflow", "keras",
                                "oneflow", "paddle")),
                    ("tokamax", ("tests", "test", "benchmarks", "bench")),
                    # Tokamax's validation and serialisation, loaded lazily when its ops run
                    ("pydantic", ("v1", "mypy", "tests")))


def _a_test(part: str) -> bool:
    """A test or benchmark module of a library (``test_x``, ``x_test``): never preloaded. A
    library's tests change JAX's global config when imported (Tokamax's turn on
    ``jax_enable_x64``: every kernel traced after it had 64-bit index maps, which Mosaic
    refuses on a TPU v5e)."""
    return part.startswith("test_") or part.endswith("_test")


def preload_allowed() -> list[str]:
    """Imports what a kernel may import (see above); starts no thread (with the tracers'
    environment: one BLAS thread). Returns the modules that failed to import (absent libraries,
    modules needing what is not installed), which a kernel then cannot import either. JAX's
    config is the same afterwards: a value an imported module changed is set back."""
    import jax

    config = dict(jax.config.values)
    try:
        return _preload()
    finally:
        changed = [name for name, value in config.items()
                   if jax.config.values.get(name, value) != value]
        for name in changed:
            jax.config.update(name, config[name])


def _preload() -> list[str]:
    import importlib
    import pkgutil

    from jaxbench.evaluator.common.jaxpr_format import ALLOWED_IMPORT_ROOTS

    failed: list[str] = []

    def load(name: str) -> Any:
        try:
            return importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not installed, or needs what is not installed
            failed.append(name)
            return None

    for name in (*sorted(ALLOWED_IMPORT_ROOTS - {"__future__"}), *_PRELOADED_NUMPY):
        load(name)
    def walk(package: Any, skipped: tuple[str, ...]) -> None:
        # pkgutil.walk_packages would import every package it meets, the left-out ones too
        # (einops' tests import torch), so the tree is walked here, one level at a time
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            last = info.name.rpartition(".")[2]
            if last in skipped or _a_test(last):
                continue
            module = load(info.name)
            if info.ispkg and module is not None and hasattr(module, "__path__"):
                walk(module, skipped)

    for root, skipped in _PRELOADED_TREES:
        package = load(root)
        if package is not None and hasattr(package, "__path__"):
            walk(package, skipped)
    return failed


def _isolate(directory: Path) -> tuple[str, Restrictions]:
    """Namespaces first (single-threaded), imports (none left to do in a forked tracer), then
    Landlock before any JAX thread."""
    from jaxbench.evaluator.sandbox import isolation, seal

    # A host profile may run the sandbox as a host without these layers would.
    full = seal.profile_allows("landlock")
    namespaces = isolation.enter_namespaces() if full else []
    with_triton = import_harness()
    source_root = str(Path(__file__).resolve().parents[2])  # the jaxbench package
    readable = isolation.python_read_roots(exclude=[source_root])
    # Shared directories holding other processes' Unix sockets are hidden (a mount namespace
    # of its own) before Landlock, which forbids mounting.
    hidden = isolation.hide_host(readable, [str(directory)])
    record = isolation.restrict(readable, [str(directory)], landlock=full)
    record["triton"] = with_triton
    record.update({"namespaces": namespaces, "hidden": hidden["hidden"]})
    return isolation.describe(record, namespaces, hidden=hidden), record


def _warm_up() -> None:
    """Traces and hands over a tiny kernel before any job, while the spare waits: Pallas and
    the hand-over's registry load their code on first use, which must happen before the rule
    snapshot (after it, they would read as rules the candidate changed)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from jaxbench.evaluator.sandbox import handover

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    spec = jax.ShapeDtypeStruct((8, 128), jnp.float32)
    closed = jax.make_jaxpr(lambda a: pl.pallas_call(copy, out_shape=a)(a))(spec)
    handover.dumps({"small": closed})
    # Operations run on the host CPU: its backend and its kernel libraries start here, while
    # files can be opened (XLA's client seeds itself from /dev/urandom, YNNPACK reads the CPU's
    # description; the seal closes both); the hand-over runs such operations (a custom
    # derivative's primal), a debug run the kernel itself.
    for dtype in (jnp.float32, jnp.bfloat16):
        (jnp.ones((8, 128), dtype) @ jnp.ones((128, 8), dtype)).block_until_ready()
        (jnp.ones((8, 128), dtype) * 2).sum().block_until_ready()


class Outbox:
    """Files for the parent, through handles opened before the seal (after it nothing can be
    opened): each file is made empty now, and rewritten whole through its handle. The parent
    reads an empty file as none written."""

    def __init__(self, directory: Path) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        self._fds = {name: os.open(directory / name, flags, 0o600)
                     for name in (STATUS, HANDOVER, PROBE)}
        self._dumps = json.dumps
        # its record, written whole as JSON at every flush
        self.status = TracerStatus()

    def write(self, name: str, data: bytes) -> None:
        fd = self._fds[name]
        os.ftruncate(fd, 0)
        view, offset = memoryview(data), 0
        while offset < len(view):
            offset += os.pwrite(fd, view[offset:], offset)

    def flush(self) -> None:
        self.write(STATUS, self._dumps(self.status.to_dict(), default=str).encode())

    def stage(self, name: str, seconds: float, **info: Any) -> None:
        self.status.stages[name] = {"seconds": round(seconds, 4), **info}
        self.flush()

    def fail(self, status: Status, stage: Stage, message: str, rule: Rule | None) -> None:
        self.status.status, self.status.stage = status, stage
        self.status.message, self.status.rule = message, rule
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


def _verdict(exc: BaseException, status: Status, stage: Stage, rule: Rule,
             prefix: str = "") -> tuple[Status, Stage, str, Rule]:
    """(status, stage, message, rule) for an exception raised while candidate code was
    involved (``status`` and ``rule`` for an exception of the kernel's own)."""
    from jaxbench.evaluator.common.errors import short_error
    from jaxbench.evaluator.sandbox.guards import SandboxViolation

    if isinstance(exc, SandboxViolation):
        return Status.REJECTED, stage, f"sandbox: {exc}", Rule.SANDBOX
    blocked = _blocked_import(exc)
    if blocked:
        return (Status.COMPILE_ERROR, stage, f"module {blocked!r} cannot be imported in the "
                "sealed sandbox: kernels may import what it loads before the seal (the static "
                "policy's allow-list: JAX's public modules, NumPy, einops, Tokamax's kernels, "
                f"the allowed standard library) ({short_error(exc, 200)})", Rule.UNAVAILABLE_IMPORT)
    if isinstance(exc, PermissionError) or "PERMISSION_DENIED" in str(exc):
        return (Status.REJECTED, stage, f"sandbox (OS isolation): {short_error(exc, 300)}",
                Rule.OS_ISOLATION)
    if isinstance(exc, FileNotFoundError) and _SEALED["seccomp"] and exc.filename is not None:
        # the seal answers every open "no such file": no kernel opens files
        return (Status.REJECTED, stage, "sandbox (OS isolation): the sealed tracer opens no "
                f"file: {short_error(exc, 300)}", Rule.OS_ISOLATION)
    if isinstance(exc, OSError) and _hidden(getattr(exc, "filename", None)):
        return Status.REJECTED, stage, ("sandbox (OS isolation): the host's shared directories "
                                        f"are hidden from kernels: {short_error(exc, 300)}"), \
            Rule.OS_ISOLATION
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc):
        return (Status.CRASHED, stage,
                f"{prefix}out of memory (limit reached): {short_error(exc, 300)}", Rule.MEMORY_LIMIT)
    message = prefix + short_error(exc)
    if type(exc).__name__ in ("TracerArrayConversionError", "ConcretizationTypeError",
                              "TracerBoolConversionError", "TracerIntegerConversionError"):
        message = ("kernels are traced under jax.jit: host NumPy/Python on input values is not "
                   f"allowed ({message})")
    if "custom calls whose targets have no compatibility guarantees" in str(exc) or \
            "callback" in str(exc).lower() and "export" in str(exc).lower():
        return Status.REJECTED, stage, ("host callback in the kernel: it cannot be exported, and "
                                        f"all work must run on the device ({short_error(exc, 200)})"), \
            Rule.HOST_CALLBACK
    return status, stage, message, rule


def _blocked_import(exc: BaseException) -> str:
    """The module an import failed to load because the seal refused its files ('' when the
    failure was anything else): an ImportError naming a module that is not loaded, or an
    OSError raised inside the import system (the module's file found, not opened). Called
    with no candidate code on the stack (frames may be read then)."""
    if isinstance(exc, ImportError) and isinstance(exc.name, str) and \
            exc.name not in sys.modules and _SEALED["seccomp"]:
        return exc.name
    if isinstance(exc, OSError) and _SEALED["seccomp"]:
        tb, name = exc.__traceback__, ""
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code.co_filename.startswith("<frozen importlib") and \
                    frame.f_code.co_name == "_find_and_load":
                found = frame.f_locals.get("name")
                name = found if isinstance(found, str) else name
            tb = tb.tb_next
        return name
    return ""


# Whether this process is sealed (set by :func:`_seal_process` before any candidate code).
_SEALED = {"seccomp": False}


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


def _fail(outbox: Outbox, job: TracerJob, exc: BaseException, status: Status, stage: Stage,
          rule: Rule, prefix: str = "") -> None:
    """Reports a failure caused by an exception, with the candidate's frames it passed through."""
    outbox.status.frames = candidate_frames(exc, job.filename, job.source)
    outbox.fail(*_verdict(exc, status, stage, rule, prefix))


def _save_outputs(outbox: Outbox, runs: list[tuple[str, list[int], Any]]) -> None:
    """Outputs of untrusted runs (probe / fallback) for the parent, which validates them."""
    from jaxbench.evaluator.common.arrays import pack

    data, layout = pack(runs)
    outbox.write(PROBE, data)
    outbox.status.probe = layout


def _debug_run(outbox: Outbox, job: TracerJob, closed: Any, jit: Any, jaxpr_as_fun: Any,
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
        task = get_task(job.task)
        fn = jit(jaxpr_as_fun(with_interpret(closed, True)))
        for i, key in enumerate(job.fallback_keys):
            print(f"--- debug run {i}: the kernel's output follows ---", flush=True)
            inputs = task.make_inputs(jax.random.wrap_key_data(np.asarray(key, np.uint32)),
                                      job.size)
            runs.append((f"untrusted{i}", key, block(fn(*inputs))))
            sys.stdout.flush()
    except Exception as exc:  # noqa: BLE001
        return _fail(outbox, job, exc, Status.RUNTIME_ERROR, Stage.CORRECT, Rule.RUNTIME,
                     "debug run: ")
    _save_outputs(outbox, runs)
    outbox.stage(PROBE_STEP, _perf_counter() - t0)
    outbox.status.status = TRACED
    outbox.flush()
    return None


class Bound(TypedDict):
    """What :func:`_seal` calls, bound before the candidate loads (:class:`_Run`): the signal
    module and the C functions of ``_signal``, the garbage collector, the guards' seal."""

    signal: ModuleType
    seal: Callable[[], None]
    gc: ModuleType
    setitimer: Callable[..., Any]
    getsignal: Callable[[int], Any]
    set_handler: Callable[..., Any]


def _seal(bound: Bound) -> None:
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


def _rule_problem(rules: Any, primitives: Any) -> str:
    from jaxbench.contract import Finding

    unknown = rules.unknown_primitives(primitives)
    if unknown:
        return Finding(f"the kernel uses primitives JAX does not define ({', '.join(unknown[:4])}): "
                       "kernels may not define primitives or lowering rules (the module checked "
                       "for the chip and the module run could then compute different things)",
                       Rule.UNKNOWN_PRIMITIVE)
    changed = rules.changed_rules()
    if changed:
        return Finding(f"the kernel changed JAX's rules for primitives ({changed}): kernels may "
                       "not register lowering, interpreter or discharge rules (the module "
                       "checked for the chip and the module run could then compute different "
                       "things)", Rule.PATCHED_HARNESS)
    return ""


class _Run:
    """One job's state, made before the candidate loads: the outbox, the job, the functions
    called after candidate code has run (bound now), the snapshots the integrity checks compare
    with, and the candidate's objects (kept alive until the process exits: no finalizers)."""

    def __init__(self, job: TracerJob, directory: Path, isolation_level: str,
                 outbox: Outbox) -> None:
        import _signal  # the C functions: the guards replace the Python-level ones
        import gc
        import signal

        import jax

        from jaxbench import compat
        from jaxbench.backends.chips import CROSS_LOWERING_GPU, CROSS_LOWERING_TPU
        from jaxbench.evaluator.common import jaxprs
        from jaxbench.evaluator.sandbox import guards, integrity
        from jaxbench.evaluator.sandbox.chip import as_chip
        from jaxbench.evaluator.sandbox.handover import dumps

        self.job, self.directory = job, directory
        self.outbox = outbox
        self.outbox.status.isolation = isolation_level
        self.specs = _avals(job.specs)
        self.traces: dict[str, ClosedJaxpr] = {}
        self.kept: list[Any] = []
        self.module: Any = None
        # Everything called after candidate code has run is bound now, before it loads.
        self.make_jaxpr, self.jit, self.block = jax.make_jaxpr, jax.jit, jax.block_until_ready
        self.with_interpret, self.jaxpr_as_fun = jaxprs.with_interpret, compat.jaxpr_as_fun
        self.scan, self.dumps, self.guards = jaxprs.scan, dumps, guards
        self.bound: Bound = {"signal": signal, "seal": guards.seal, "gc": gc,
                      "setitimer": _signal.setitimer, "getsignal": _signal.getsignal,
                      "set_handler": _signal.signal}
        kind = job.tpu_device_kind or CROSS_LOWERING_TPU
        gpu_kind = job.gpu_device_kind or CROSS_LOWERING_GPU
        self.chip = (lambda: as_chip("tpu", kind)) if job.target == "tpu" else \
            (lambda: as_chip("cuda", gpu_kind))
        self.integrity = integrity
        self.snapshot: Any = None  # taken last, just before lock-down
        self.rules: Any = None
        self.patched: Any = None  # the integrity check: a closure (_integrity_check)


def _integrity_check(run: _Run) -> Any:
    """``patched(stage)``: whether harness code or JAX's rule tables were replaced since the
    snapshot (re-checked after every step, since code the candidate left behind, e.g. a
    finalizer, can run at any point). A closure made before the candidate loads: no module or
    class attribute leads to it, so candidate code cannot replace the check itself."""
    changed, state_problem = run.integrity.changed, run.guards.state_problem
    fail, rule_problem = run.outbox.fail, _rule_problem

    def patched(stage: Stage) -> bool:
        found = changed(run.snapshot) or state_problem(run.directory, run.job.filename)
        if found:
            fail(Status.REJECTED, stage, f"the kernel patched harness code: {found}",
                 Rule.PATCHED_HARNESS)
            return True
        problem = rule_problem(run.rules, [])
        if problem:
            fail(Status.REJECTED, stage, problem, problem.rule)
        return bool(problem)

    return patched


def _avals(specs: list[Any]) -> list[Any]:
    import jax

    return [jax.ShapeDtypeStruct(tuple(shape), jax.numpy.dtype(dtype)) for shape, dtype in specs]


def _enter_scratch(directory: Path) -> None:
    """The job's own working directory and temp dir (made before the seal)."""
    import tempfile

    scratch = directory / "scratch"
    scratch.mkdir(exist_ok=True)
    os.chdir(scratch)
    os.environ["TMPDIR"] = str(scratch)
    tempfile.tempdir = str(scratch)


def _seal_process() -> dict[str, Any]:
    """The seal (:mod:`jaxbench.evaluator.sandbox.seal`), unless the host profile leaves it out:
    from here on this process opens, creates and executes no file and makes no connection."""
    from jaxbench.evaluator.sandbox import seal

    if not seal.profile_allows("seal"):
        return {"seccomp": False,
                "error": f"host profile {seal.host_profile()!r} ({seal.HOST_PROFILE})"}
    # a debug run's tracer (its pool says so; the kernel runs here, its verdict never counts):
    # files may be opened for reading (XLA's threads seed their random devices from
    # /dev/urandom when jax.debug.print's callback moves its arguments)
    debug = os.environ.get(DEBUG_TRACER) == "1"
    record = dict(seal.install(read_only_opens=debug))
    _SEALED["seccomp"] = bool(record.get("seccomp"))
    return record


# Set by the parent's pool for tracers of debug runs (pool.py), never by a kernel.
DEBUG_TRACER = "JAXBENCH_TRACER_DEBUG"


def _step_trace(run: _Run) -> bool:
    """The one trace the evaluated modules come from: the candidate loads and is traced at the
    evaluated size, answering its hardware questions as the judged chip."""
    job, t0 = run.job, _perf_counter()
    run.guards.candidate_file(job.filename)
    calling = False
    try:
        with run.chip():
            run.module = _load_candidate(job.source, job.filename)
            run.kept.append(run.module)
            calling = True
            closed = run.make_jaxpr(run.module.kernel)(*run.specs)
        run.kept.append(closed)
    except Exception as exc:  # noqa: BLE001 - any candidate error is a verdict
        # raised while kernel(*inputs) was traced, not while the file loaded: the parent adds
        # how the task calls the kernel (only ever a hint in the message)
        run.outbox.status.info["in_kernel"] = calling
        _fail(run.outbox, job, exc, Status.COMPILE_ERROR, Stage.TRACE, Rule.TRACE_ERROR)
        return False
    if run.patched(Stage.TRACE):
        return False
    run.traces[job.size] = closed
    run.outbox.stage(Stage.TRACE, _perf_counter() - t0)
    return True


def _step_sizes(run: _Run) -> bool:
    """The other sizes, traced now so that no candidate code runs after the hand-over."""
    job, t0 = run.job, _perf_counter()
    for other, other_specs in job.size_specs.items():
        if other == job.size:
            continue
        try:
            with run.chip():
                run.traces[other] = run.make_jaxpr(run.module.kernel)(*_avals(other_specs))
        except Exception as exc:  # noqa: BLE001 - tracing at another size failed
            _fail(run.outbox, job, exc, Status.COMPILE_ERROR, Stage.LOWER,
                  Rule.OTHER_SIZE_TRACE_ERROR, f"tracing at size {other!r}: ")
            return False
        run.kept.append(run.traces[other])
        if run.patched(Stage.LOWER):
            return False
    run.outbox.stage(SIZES, _perf_counter() - t0)
    return True


def _step_handover(run: _Run) -> bool:
    """The hand-over: sealed first; the jaxprs as data, written last."""
    from jaxbench.evaluator.common.errors import short_error

    t0 = _perf_counter()
    _seal(run.bound)
    try:
        data = run.dumps(run.traces)
    except Exception as exc:  # noqa: BLE001 - an object in the jaxpr that is not data
        run.outbox.fail(Status.UNVERIFIED, Stage.TRACE,
                        "the traced kernel holds an object that cannot be handed to the judge "
                        f"as data: {short_error(exc, 300)}", Rule.NOT_DATA)
        return False
    if run.patched(Stage.LOWER):
        return False
    run.outbox.write(HANDOVER, data)
    run.outbox.stage(HANDOVER_STEP, _perf_counter() - t0, bytes=len(data))
    run.outbox.status.status = TRACED
    run.outbox.flush()
    return True


def _step_debug(run: _Run) -> bool:
    """A debug run executes the trace here: only with a kernel in it, and no host callback
    but ``jax.debug.print``'s (the judge applies the rules to every other evaluation)."""
    closed = run.traces[run.job.size]
    found = run.scan(closed)
    if found.callbacks and set(found.callbacks) != {"debug_callback"}:
        run.outbox.fail(Status.REJECTED, Stage.TRACE,
                        f"host callback ({', '.join(sorted(set(found.callbacks)))}) in the kernel: "
                        "all work must run on the device", Rule.HOST_CALLBACK)
        return False
    if found.kernels == 0:
        run.outbox.fail(Status.NO_PALLAS, Stage.TRACE,
                        "no pallas_call in the traced kernel: the hot path must be Pallas",
                        Rule.NO_KERNEL)
        return False
    _debug_run(run.outbox, run.job, closed, run.jit, run.jaxpr_as_fun, run.with_interpret,
               run.block)
    return True


def run_job(job: dict[str, Any], directory: Path, isolation_level: str,
            outbox: Outbox, snapshot: Any = None) -> None:
    """One evaluation. The order is the promise: every piece of candidate code (the import,
    the trace at every size, anything those leave behind) runs first; the untrusted checks
    come next; then the process is sealed and the hand-over is made and written last, with
    status.json the very last file, and the process exits. The steps are bound before the
    candidate loads, and the integrity checks after each one see a step replaced. ``snapshot``:
    the integrity snapshot, taken while the tracer waited for its job (off the evaluation's
    path), brought up to now here; else it is taken here."""
    from jaxbench.evaluator.sandbox.isolation import set_rlimits

    case = TracerJob.from_dict(job)
    set_rlimits(case.memory_bytes, case.file_bytes)
    run = _Run(case, directory, isolation_level, outbox)
    run.patched = _integrity_check(run)
    # `jaxbench eval --debug`: the kernel runs here, and its verdict never counts
    steps = (_step_trace, _step_debug) if case.debug else (_step_trace, _step_sizes,
                                                           _step_handover)
    run.outbox.flush()
    run.guards.disarm_unaudited()
    if snapshot is not None:  # what the harness changed since it was taken is the baseline
        snapshot.refresh()
    run.snapshot = snapshot if snapshot is not None else run.integrity.snapshot()
    run.rules = run.integrity.RuleSnapshot()
    run.guards.lock_down(directory)
    for step in steps:
        if not step(run):
            return


def main(directory: Path | None = None) -> None:
    """A tracer's life: isolation, warm-up, the handshake, one job, exit. ``directory`` is its
    private directory (``sys.argv[1]`` when started as a command; the fork server passes it)."""
    directory = Path(directory or sys.argv[1]).resolve()
    isolation_level, record = _isolate(directory)
    from jaxbench.evaluator.sandbox import guards

    guards.install_hook()
    _warm_up()
    outbox = Outbox(directory)  # its files, opened while files can be opened
    _enter_scratch(directory)
    sealed = _seal_process()
    if sealed.get("seccomp"):
        reads = "; files readable: a debug run's" if sealed.get("reads") else ""
        isolation_level = f"seccomp({sealed.get('syscalls')} syscalls{reads})+{isolation_level}"
    else:
        isolation_level += f" (no seal: {sealed.get('error', 'not installed')})"
    # The integrity snapshot (sandbox/integrity.py) is taken now, while a spare waits for its
    # job, and brought up to date when the job comes (0.33 s of a 2-core VM's evaluation
    # otherwise, docs/measurements.md); no candidate code runs before either.
    from jaxbench.evaluator.sandbox import integrity

    early = integrity.snapshot()
    # The handshake, one line written before any job (so before any candidate code): the
    # parent takes the isolation level from here (and checks what it can in /proc), never
    # from files the candidate could rewrite.
    handshake = {"isolation": isolation_level, "namespaces": record.get("namespaces", []),
                 "hidden": record.get("hidden", []),
                 "no_new_privs": bool(record.get("no_new_privs")),
                 "seccomp": bool(sealed.get("seccomp")), "reads": bool(sealed.get("reads")),
                 "landlock": bool(record.get("landlock"))}
    sys.stdout.write("ready " + json.dumps(handshake) + "\n")
    sys.stdout.flush()
    raw = sys.stdin.read()
    if not raw.strip():
        _exit(0)  # a spare that was never used
    job = json.loads(raw)
    try:
        run_job(job, directory, isolation_level, outbox, early)
    except BaseException as exc:  # a harness bug, or the candidate broke the harness
        import traceback

        traceback.print_exc()
        try:
            outbox.fail(Status.CRASHED, Stage.TRACE, f"tracer failed: "
                                   f"{type(exc).__name__}: {str(exc)[:300]}", Rule.HARNESS)
        finally:
            _exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
    _exit(0)  # skip interpreter teardown the candidate may have hooked


if __name__ == "__main__":
    main()
