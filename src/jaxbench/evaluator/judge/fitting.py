"""What fits the chip, decided before anything runs there (the device owner only).

XLA compiles the task's reference (the timing's baseline) and its float32 truth for the chip
from abstract shapes; its memory analysis of each (arguments, outputs and temporaries), or
the out-of-memory error of the compile itself, says whether it fits the chip's memory. Then:

- a reference that does not fit is not timed: the kernel is still judged, and its result says
  why it has no speedup (the bytes needed and available); it is never the kernel's failure;
- the float32 truth is computed on the chip at the highest matmul precision, whole where it
  fits, else in slices along the task's declared :attr:`~jaxbench.tasks.spec.Task.batch`,
  else on the host's CPU; the result records which.

Each (task, size) is compiled once per owner and kept: the owner stays warm across a run.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxbench.evaluator.judge import xla_cache
from jaxbench.tasks.spec import Task, upcast

T = TypeVar("T")

HEADROOM = 0.92  # of the chip's memory: the kernel's module and the timing's inputs need room
_GIB = re.compile(r"\(([\d.]+)([KMGT])\) exceeds available [A-Z]+ \(([\d.]+)([KMGT])\)")
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_KEPT: dict[tuple[int, str], Fit] = {}
_LOCK = threading.Lock()
_COMPILING: dict[tuple[int, str], threading.Lock] = {}


def chip_memory() -> int | None:
    """The chip's memory as its runtime reports it (``bytes_limit``), None where it does not."""
    try:
        return (jax.devices()[0].memory_stats() or {}).get("bytes_limit")
    except Exception:  # noqa: BLE001 - a backend without memory statistics
        return None


def _needed(compiled: Any) -> int | None:
    """Arguments + outputs + temporaries of a compiled module, from XLA's memory analysis."""
    try:
        m = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 - a backend without one
        return None
    if m is None:
        return None
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes)


def _out_of_memory(exc: BaseException) -> tuple[int | None, int | None] | None:
    """(needed, available) from XLA's out-of-memory error, (None, None) when it names no
    figures; None when ``exc`` is not one."""
    text = str(exc)
    if "RESOURCE_EXHAUSTED" not in text and "Ran out of memory" not in text:
        return None
    m = _GIB.search(text)
    if not m:
        return None, None
    return (int(float(m.group(1)) * _UNITS[m.group(2)]),
            int(float(m.group(3)) * _UNITS[m.group(4)]))


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**30:.2f} GiB"


def _compile(fn: Any, specs: list[Any], available: int | None) -> tuple[Any, int | None, str]:
    """(compiled or None, bytes needed, why not): ``fn`` compiled for the chip at ``specs``,
    None when XLA says it does not fit or its memory analysis exceeds the headroom."""
    try:
        compiled = jax.jit(fn).lower(*specs).compile()
    except Exception as exc:  # noqa: BLE001 - only an out-of-memory compile is answered here
        said = _out_of_memory(exc)
        if said is None:
            raise
        needed, limit = said
        return None, needed, (f"needs {_gib(needed)} of the chip's memory, which has "
                              f"{_gib(limit or available)}")
    needed = _needed(compiled)
    if needed is not None and available is not None and needed > HEADROOM * available:
        return None, needed, (f"needs {_gib(needed)} of the chip's {_gib(available)} (more "
                              f"than {HEADROOM:.0%}, the rest kept for the kernel and inputs)")
    return compiled, needed, ""


def _specs(shapes: list[Any]) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct(tuple(s.shape), jnp.dtype(s.dtype)) for s in shapes]


specs_of = _specs  # the runner compiles the kernel's module from the same abstract inputs


@dataclass
class Fit:
    """What fits the chip for one task and size (see the module's docstring)."""

    reference: Any  # the compiled bf16 reference, or None: it is not timed
    reference_bytes: int | None
    available_bytes: int | None
    reason: str  # why the reference is not timed ("" when it is)
    truth_on: str  # "chip", "chip, in slices of B=2", "host CPU"
    draw: Any = None  # the task's input drawing, compiled for the chip ahead of time (kept)
    _truth: Any = None
    _slices: tuple[str, int, list[int | None], list[int]] | None = None
    # the reference's timing samples on this chip, kept for later candidates (timing.py,
    # time_adaptive: reused where the verdict does not depend on them)
    reference_times: Any = None
    # seconds each of the task's programs took to compile here (reference, truth, drawing)
    compile_s: dict[str, float] = dataclasses.field(default_factory=dict)

    def record(self) -> dict[str, bool | int | str | None]:
        return {"reference": self.reference is not None, "reference_bytes": self.reference_bytes,
                "available_bytes": self.available_bytes, "reason": self.reason,
                "truth_on": self.truth_on}

    def truth(self, inputs: tuple, host: bool = True) -> list[Any]:
        """The float32 truth of ``inputs`` (already drawn): on the host as float32 arrays, or
        with ``host=False`` left where it was computed (the chip, when it fits whole)."""
        if self._slices is None:
            if self.truth_on == "host CPU":
                cpu = jax.devices("cpu")[0]
                with jax.default_device(cpu):
                    out = self._truth(*jax.device_put(tuple(inputs), cpu))
            else:
                out = self._truth(*inputs)
            leaves = jax.tree_util.tree_leaves(out)
            return [np.asarray(x, np.float32) for x in leaves] if host else leaves
        _, step, in_axes, out_axes = self._slices
        total = next(x.shape[a] for x, a in zip(inputs, in_axes, strict=True) if a is not None)
        parts: list[list[np.ndarray]] = []
        for start in range(0, total, step):
            sliced = [x if a is None else jax.lax.slice_in_dim(x, start, start + step, axis=a)
                      for x, a in zip(inputs, in_axes, strict=True)]
            out = self._truth(*sliced)
            parts.append([np.asarray(x, np.float32) for x in jax.tree_util.tree_leaves(out)])
        return [np.concatenate([p[i] for p in parts], axis=axis)
                for i, axis in enumerate(out_axes)]


def _float32_reference(task: Task) -> Any:
    reference = task.reference
    return lambda *xs: reference(*upcast(xs))


def _truth_plan(task: Task, size: str, available: int | None) -> tuple[Any, str, Any]:
    """(compiled truth, where, slices): the float32 truth compiled for the chip whole, else in
    the largest batch slices that fit, else for the host CPU."""
    fn = _float32_reference(task)
    specs = _specs(task.input_specs(size))
    with jax.default_matmul_precision("highest"):
        compiled, _, _ = _compile(fn, specs, available)
        if compiled is not None:
            return compiled, "chip", None
        axes = task.batch_axes(size)
        if axes is not None:
            in_axes, out_axes = axes
            total = task.sizes[size][task.batch]
            step = total // 2
            while step >= 1:
                if total % step == 0:
                    sliced = [jax.ShapeDtypeStruct(
                        s.shape if a is None else s.shape[:a] + (step,) + s.shape[a + 1:],
                        s.dtype) for s, a in zip(specs, in_axes, strict=True)]
                    compiled, _, _ = _compile(fn, sliced, available)
                    if compiled is not None:
                        return compiled, f"chip, in slices of {task.batch}={step}", (
                            task.batch, step, in_axes, out_axes)
                step //= 2
    return jax.jit(fn), "host CPU", None


def check(task: Task, size: str) -> Fit:
    """The fit of ``task`` at ``size`` on this process's chip (compiled once, then kept). Two
    requests of one (task, size) compile it once; other tasks' compiles run beside it."""
    key = (id(task), size)
    with _LOCK:
        known = _KEPT.get(key)
        if known is not None:
            return known
        lock = _COMPILING.setdefault(key, threading.Lock())
    with lock:
        known = _KEPT.get(key)
        if known is not None:
            return known
        available = chip_memory()
        # The three programs compile side by side (XLA's compiles release the GIL; seconds
        # each on a chip at full size), each written to and counted in the compile cache as
        # if compiled here. The drawing is compiled ahead of time: the owner's periodic
        # jax.clear_caches() cannot drop it, so a task's inputs are compiled once per owner.
        seconds: dict[str, float] = {}

        def timed(name: str, fn: Callable[[], T]) -> Callable[[], T]:
            def run() -> T:
                t0 = time.perf_counter()
                try:
                    return fn()
                finally:
                    seconds[f"{name}_s"] = round(time.perf_counter() - t0, 4)
            return xla_cache.carried(run)

        with ThreadPoolExecutor(3, thread_name_prefix="jaxbench-fit") as pool:
            compiling = pool.submit(timed("reference", lambda: _compile(
                task.reference, _specs(task.input_specs(size)), available)))
            planning = pool.submit(timed("truth", lambda: _truth_plan(task, size, available)))
            drawing = pool.submit(timed(
                "drawing", lambda: task.drawing(size).lower(jax.random.key(0)).compile()))
            reference, needed, reason = compiling.result()
            truth, truth_on, slices = planning.result()
            draw = drawing.result()
        if reference is None:
            reason = f"the reference (XLA's program, the baseline) does not fit the chip at " \
                     f"size {size!r}: it {reason}; the kernel is judged but not timed"
        fit = Fit(reference, needed, available, reason, truth_on, draw, truth, slices,
                  compile_s=seconds)
        with _LOCK:
            _KEPT[key] = fit
        return fit


__all__ = ["HEADROOM", "Fit", "check", "chip_memory"]
