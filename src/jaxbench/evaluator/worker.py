"""The worker process: runs one candidate through ``trace``, ``lower``, the correctness
runs and (on a device) ``time`` and ``recheck``.

Started as ``python -m jaxbench.evaluator.worker``. It imports JAX and warms it
up *before* a job arrives (so a spare worker hides start-up), then reads one
job as JSON from stdin, does it, and exits. Everything the harness needs later
(its timer, the file handles it reports through, the inputs, the compiled
reference for timing) is taken before the candidate's code is loaded; then the
sandbox is locked. The worker never sees expected outputs: it writes the
candidate's outputs, and the parent compares them to the ground truth.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

_perf_counter = time.perf_counter  # taken before any candidate code can exist


def _harness_compilation_cache(enabled: bool) -> None:
    """XLA's persistent cache for the harness's own programs (input drawing, the reference,
    the warm-up), shared by all workers; always off before candidate code runs."""
    import jax

    cache_dir = os.environ.get("JAXBENCH_XLA_CACHE")
    if not cache_dir:
        return
    if enabled:
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_enable_compilation_cache", enabled)


def _warm_up() -> None:
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    _harness_compilation_cache(True)

    import jaxbench.tasks  # noqa: F401
    from jaxbench.backends import interpret_mode

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    x = jnp.ones((8, 128), jnp.float32)
    with interpret_mode("generic"):
        jax.jit(lambda a: pl.pallas_call(copy, out_shape=a)(a))(x).block_until_ready()


class Reporter:
    """Writes the result record and the output arrays through handles opened before lock-down."""

    def __init__(self, out_dir: Path) -> None:
        import numpy as np

        self._np_save = np.save
        self._json_dumps = json.dumps
        self._result_file = open(out_dir / "result.json", "w")  # noqa: SIM115
        self._outputs_file = open(out_dir / "outputs.npy", "wb")  # noqa: SIM115
        self._artifacts_file = open(out_dir / "artifacts.json", "w")  # noqa: SIM115
        self.artifacts: dict[str, Any] = {}
        self.result: dict[str, Any] = {"stages": {}, "trials": []}

    def save_artifacts(self, **data: Any) -> None:
        self.artifacts.update(data)
        self._artifacts_file.seek(0)
        self._artifacts_file.truncate()
        self._artifacts_file.write(self._json_dumps(self.artifacts, default=str))
        self._artifacts_file.flush()

    def flush(self) -> None:
        self._result_file.seek(0)
        self._result_file.truncate()
        self._result_file.write(self._json_dumps(self.result, default=str))
        self._result_file.flush()

    def stage(self, name: str, seconds: float, **info: Any) -> None:
        self.result["stages"][name] = {"seconds": round(seconds, 4), **info}
        self.flush()

    def fail(self, status: str, stage: str, message: str) -> None:
        self.result.update(status=status, stage=stage, message=message)
        self.flush()

    def save_outputs(self, label: str, key: list[int] | None, outputs: Any) -> None:
        import jax
        import numpy as np

        leaves = []
        for leaf in jax.tree_util.tree_leaves(outputs):
            arr = np.asarray(leaf)
            dtype = str(arr.dtype)
            if arr.dtype.kind == "V":  # ml_dtypes (bfloat16, float8): ship the raw bits
                arr = arr.view(f"u{arr.dtype.itemsize}")
            self._np_save(self._outputs_file, arr, allow_pickle=False)
            leaves.append({"shape": list(leaf.shape), "dtype": dtype})
        self._outputs_file.flush()
        treedef = str(jax.tree_util.tree_structure(outputs))
        self.result["trials"].append(
            {"label": label, "key": key, "leaves": leaves, "treedef": treedef})
        self.flush()


def _load_candidate(source: str, filename: str) -> ModuleType:
    module = ModuleType("candidate")
    module.__file__ = filename
    code = compile(source, filename, "exec")
    exec(code, module.__dict__)  # noqa: S102 - the candidate, under the sandbox
    if not callable(module.__dict__.get("kernel")):
        raise AttributeError("the module defines no callable `kernel`")
    return module


# Installed kernel libraries a candidate may use whose import needs what the sandbox refuses
# once candidate code is on the stack (Tokamax's autotuner imports multiprocessing; its
# dependencies read their callers' frames at import time): imported before lock-down.
_PRELOADED_ROOTS = ("tokamax",)


def _preload_libraries(source: str) -> None:
    """Imports the modules of ``_PRELOADED_ROOTS`` that the candidate's source names."""
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
    """(status, stage, message) for an exception raised by candidate code."""
    from jaxbench.evaluator.result import short_error
    from jaxbench.evaluator.sandbox import SandboxViolation

    if isinstance(exc, SandboxViolation):
        return "rejected", stage, f"sandbox: {exc}"
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc):
        return "crashed", stage, f"{prefix}out of memory (limit reached): {short_error(exc, 300)}"
    message = prefix + short_error(exc)
    if type(exc).__name__ in ("TracerArrayConversionError", "ConcretizationTypeError",
                              "TracerBoolConversionError", "TracerIntegerConversionError"):
        message = ("kernels are traced under jax.jit: host NumPy/Python on input values is not "
                   f"allowed ({message})")
    return status, stage, message


def _block(x: Any) -> Any:
    import jax

    return jax.block_until_ready(x)


def run_job(job: dict[str, Any]) -> None:
    job_started = _perf_counter()
    import jax
    import numpy as np

    from jaxbench.backends import (
        cross_lower,
        device_kind,
        interpret_mode,
        reset_tpu_interpreter,
        tpu_check_params,
        tpu_races_found,
    )
    from jaxbench.evaluator import integrity, sandbox
    from jaxbench.evaluator.artifacts import capture_kernel_ir, compiled_artifacts, lowered_artifacts
    from jaxbench.evaluator.jaxpr_walk import walk
    from jaxbench.evaluator.result import short_error
    from jaxbench.tasks import get_task

    out_dir = Path(job["out_dir"])
    scratch = out_dir / "scratch"
    scratch.mkdir(exist_ok=True)
    os.chdir(scratch)
    tempfile.tempdir = str(scratch)
    os.environ["TMPDIR"] = str(scratch)
    sandbox.set_limits(job.get("memory_bytes"), job.get("file_bytes", 1 << 30))
    reporter = Reporter(out_dir)
    result = reporter.result
    result["device_kind"] = device_kind()
    result["backend"] = jax.default_backend()

    task = get_task(job["task"])
    size, target, mode = job["size"], job["target"], job["mode"]
    specs = [jax.ShapeDtypeStruct(s.shape, jax.numpy.dtype(s.dtype)) for s in task.input_specs(size)]
    trial_sets = [(f"trial{i}", k, task.make_inputs(jax.random.wrap_key_data(
        np.asarray(k, np.uint32)), size)) for i, k in enumerate(job["trial_keys"])]
    jax.block_until_ready([inputs for _, _, inputs in trial_sets])
    timing_ref, timing_sets = None, []
    if mode == "device" and job.get("time", True):
        timing_ref = jax.jit(task.reference).lower(*trial_sets[0][2]).compile()
        # Enough distinct input sets that together they overflow the device's caches, so
        # neither side is timed on cache-hot data.
        timing_sets = [inputs for _, _, inputs in trial_sets]
        for k in job.get("timing_keys", [])[: max(0, job.get("timing_sets", 0) - len(timing_sets))]:
            timing_sets.append(task.make_inputs(jax.random.wrap_key_data(np.asarray(k, np.uint32)),
                                                size))
        jax.block_until_ready(timing_sets)

    _preload_libraries(job["source"])
    make_jaxpr, jit = jax.make_jaxpr, jax.jit  # the candidate may not swap these under us
    _harness_compilation_cache(False)
    t_inputs = _perf_counter()
    snapshot = integrity.snapshot()
    result["setup_s"] = {"inputs": round(t_inputs - job_started, 3),
                         "snapshot": round(_perf_counter() - t_inputs, 3)}
    sandbox.lock_down(scratch)

    # -- load + trace -------------------------------------------------------------
    t0 = _perf_counter()
    try:
        module = _load_candidate(job["source"], job.get("filename", "<kernel>"))
        kernel = module.kernel
        closed = make_jaxpr(kernel)(*specs)
    except Exception as exc:  # noqa: BLE001 - any candidate error is a verdict
        return reporter.fail(*_verdict(exc, "compile_error", "trace"))
    if (patched := integrity.changed(snapshot)):
        return reporter.fail("rejected", "trace", f"the kernel patched harness code: {patched}")
    report = walk(closed.jaxpr)
    task_flops = task.flops(size)
    reporter.stage("trace", _perf_counter() - t0, pallas_calls=report.pallas_calls,
                   outside_flops=report.outside_flops, task_flops=task_flops,
                   outside_ops=report.outside_ops)
    if report.callbacks:
        return reporter.fail("rejected", "trace",
                             f"host callback ({', '.join(sorted(set(report.callbacks)))}) "
                             "in the kernel: all work must run on the device")
    if report.pallas_calls == 0:
        return reporter.fail("no_pallas", "trace",
                             "no pallas_call in the traced kernel: the hot path must be Pallas")
    limit = job.get("max_outside_flops_fraction", 0.1)
    if task_flops > 0 and report.outside_flops > limit * task_flops:
        return reporter.fail(
            "rejected", "trace",
            f"work outside pallas_call: {report.outside_flops / task_flops:.0%} of the task's "
            f"FLOPs run in XLA ({report.top_ops()} FLOPs); at most {limit:.0%} may (glue like "
            "reshapes, casts and padding is free)")

    # -- lower --------------------------------------------------------------------
    t0 = _perf_counter()
    try:
        with capture_kernel_ir() as kernel_ir:
            lowered = cross_lower(kernel, tuple(specs), target)
        if job.get("save_ir"):
            reporter.save_artifacts(**lowered_artifacts(closed, lowered, kernel_ir))
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, (sandbox.SandboxViolation, MemoryError)):
            return reporter.fail(*_verdict(exc, "compile_error", "lower"))
        hint = ""
        if target == "gpu" and "Cannot lower pallas_call on platform" in str(exc):
            hint = ("GPU kernels must pass compiler_params=plgpu.CompilerParams(...) from "
                    "jax.experimental.pallas.triton (the Triton backend); ")
        return reporter.fail("compile_error", "lower",
                             f"lowering for {target}: {hint}{short_error(exc)}")
    reporter.stage("lower", _perf_counter() - t0, platform=target)
    result["compile_s"] = round(_perf_counter() - t0, 4)

    # -- correctness runs -----------------------------------------------------------
    compiled = jit(kernel)
    t0 = _perf_counter()
    try:
        for label, key, inputs in trial_sets:
            if mode == "interpret":
                with interpret_mode("generic"):
                    out = _block(compiled(*inputs))
            else:
                out = _block(compiled(*inputs))
            reporter.save_outputs(label, key, out)
    except Exception as exc:  # noqa: BLE001
        return reporter.fail(*_verdict(exc, "runtime_error", "correct"))
    info: dict[str, Any] = {}
    if mode == "interpret" and target == "tpu" and job.get("tpu_interpret", True):
        label, key, inputs = trial_sets[0]
        # Two simulated cores, parallel grid axes shuffled, races detected, NaN-filled memory:
        # kernels that only work sequentially or read buffers before their DMA lands fail here.
        params = {**tpu_check_params(key[0]), **job.get("tpu_interpret_params", {})}
        try:
            with interpret_mode("tpu", **params):
                out = _block(jit(kernel)(*inputs))
            # A race is judged by its effect: the outputs of this run are compared like any
            # trial. (Library kernels such as splash attention race benignly on outputs they
            # use as scratch and discard.)
            info["tpu_interpreter_race"] = tpu_races_found()
            reporter.save_outputs("tpu_interpreter", key, out)
            info["tpu_interpreter"] = "ran"
            info["tpu_interpreter_params"] = {k: v for k, v in params.items() if k != "random_seed"}
        except NotImplementedError as exc:
            info["tpu_interpreter"] = f"unsupported: {short_error(exc, 200)}"
            reset_tpu_interpreter()
        except Exception as exc:  # noqa: BLE001
            reset_tpu_interpreter()
            return reporter.fail(*_verdict(exc, "runtime_error", "correct", "TPU interpreter: "))
    if (patched := integrity.changed(snapshot)):
        return reporter.fail("rejected", "correct", f"the kernel patched harness code: {patched}")
    reporter.stage("correct", _perf_counter() - t0, **info)

    if mode != "device" or timing_ref is None:
        result["status"] = "ran"
        return reporter.flush()

    # -- time (device) ----------------------------------------------------------------
    from jaxbench.evaluator.timing import time_interleaved

    t0 = _perf_counter()
    try:
        cand = jit(kernel).lower(*trial_sets[0][2]).compile()
        result["compile_s"] = round(_perf_counter() - t0, 4)
        if job.get("save_ir"):
            reporter.save_artifacts(**compiled_artifacts(cand))
        timing = time_interleaved(timing_ref, cand, timing_sets,
                                  perf_counter=_perf_counter, **job.get("timing", {}))
    except Exception as exc:  # noqa: BLE001
        return reporter.fail(*_verdict(exc, "runtime_error", "time"))
    reporter.stage("time", _perf_counter() - t0, **timing)

    # -- recheck (device) ---------------------------------------------------------------
    t0 = _perf_counter()
    try:
        for i, key in enumerate(job.get("recheck_keys", [])):
            inputs = task.make_inputs(jax.random.wrap_key_data(np.asarray(key, np.uint32)), size)
            reporter.save_outputs(f"recheck{i}", key, _block(cand(*inputs)))
    except Exception as exc:  # noqa: BLE001
        return reporter.fail(*_verdict(exc, "runtime_error", "recheck"))
    reporter.stage("recheck", _perf_counter() - t0)
    result["status"] = "ran"
    reporter.flush()


def main() -> None:
    from jaxbench.evaluator import sandbox

    sandbox.install_hook()
    _warm_up()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    raw = sys.stdin.read()
    if not raw.strip():
        return  # a spare that was never used
    job = json.loads(raw)
    try:
        run_job(job)
    except BaseException:  # a harness bug: leave a trace for the parent
        (Path(job["out_dir"]) / "worker_error.txt").write_text(traceback.format_exc())
        raise
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown the candidate may have hooked


if __name__ == "__main__":
    main()
