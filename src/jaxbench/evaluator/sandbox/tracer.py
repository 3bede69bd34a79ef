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
from typing import Any

_perf_counter = time.perf_counter
_exit = os._exit

# Files this process writes into its directory (the parent reads them with O_NOFOLLOW).
STATUS, HANDOVER, PROBE = "status.json", "jaxpr.pkl", "probe.npy"


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
    from jaxbench.evaluator.common import arrays, artifacts, jaxpr_format, jaxprs, schema  # noqa: F401  # noqa: F401
    from jaxbench.evaluator.sandbox import chip, guards, handover, integrity  # noqa: F401

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
    from jaxbench.evaluator.common.schema import short_error
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
    from jaxbench.evaluator.common.arrays import pack

    data, layout = pack(runs)
    outbox.write(PROBE, data)
    outbox.status["probe"] = layout


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
    outbox.status.update(status="traced")
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

    from jaxbench import compat
    from jaxbench.evaluator.common import jaxprs
    from jaxbench.evaluator.common.schema import CROSS_LOWERING_GPU, CROSS_LOWERING_TPU, short_error
    from jaxbench.evaluator.sandbox import guards, integrity
    from jaxbench.evaluator.sandbox.chip import as_chip
    from jaxbench.evaluator.sandbox.handover import dumps
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
    target, size = job["target"], job["size"]
    filename = job.get("filename", "<kernel>")
    _preload_libraries(job["source"])
    # Everything called after candidate code has run is bound now, before it loads.
    make_jaxpr, jit, block = jax.make_jaxpr, jax.jit, jax.block_until_ready
    with_interpret, jaxpr_as_fun = jaxprs.with_interpret, \
        compat.jaxpr_as_fun
    import _signal  # the C functions: the guards replace the Python-level ones

    bound = {"signal": signal, "seal": guards.seal, "gc": gc, "setitimer": _signal.setitimer,
             "getsignal": _signal.getsignal, "set_handler": _signal.signal}
    kind = job.get("tpu_device_kind", CROSS_LOWERING_TPU)
    gpu_kind = job.get("gpu_device_kind", CROSS_LOWERING_GPU)
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

    def scanned_for_debug(trace: Any, outbox: Outbox) -> bool:
        """A debug run executes the trace here: only with a kernel in it, and no host callback
        but ``jax.debug.print``'s (the judge applies the rules to every other evaluation)."""
        found = jaxprs.scan(trace)
        if found.callbacks and set(found.callbacks) != {"debug_callback"}:
            outbox.fail("rejected", "trace", f"host callback ({', '.join(sorted(set(found.callbacks)))}) "
                        "in the kernel: all work must run on the device")
            return True
        if found.kernels == 0:
            outbox.fail("no_pallas", "trace",
                        "no pallas_call in the traced kernel: the hot path must be Pallas")
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
    if patched("trace"):
        return None
    outbox.stage("trace", _perf_counter() - t0)
    if debug:
        if scanned_for_debug(closed, outbox):
            return None
        return _debug_run(outbox, job, closed, jit, jaxpr_as_fun, with_interpret, block)

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
        if patched("lower"):
            return None
    outbox.stage("sizes", _perf_counter() - t0)

    # -- the hand-over: sealed first; the jaxprs as data, written last ------------------------
    t0 = _perf_counter()
    _seal(bound)
    try:
        data = dumps(traces)
    except Exception as exc:  # noqa: BLE001 - an object in the jaxpr that is not data
        return outbox.fail("unverified", "trace",
                           "the traced kernel holds an object that cannot be handed to the judge "
                           f"as data: {short_error(exc, 300)}")
    if patched("lower"):
        return None
    outbox.write(HANDOVER, data)
    outbox.stage("handover", _perf_counter() - t0, bytes=len(data))
    outbox.status.update(status="traced")
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
