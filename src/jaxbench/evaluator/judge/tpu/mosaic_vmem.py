"""The VMEM budget of each Mosaic kernel in an exported TPU module (trusted side).

Read out of the target module the runner lowered (never out of anything the untrusted side
reports), one ``tpu_custom_call`` at a time; :func:`jaxbench.evaluator.judge.budgets.check`
calls it for every kernel at every size.

- **TPU (Mosaic)**: every ``tpu_custom_call`` carries its Mosaic kernel as base64 MLIR bytecode
  in its backend config. The kernel function's VMEM ``memref`` operands are its blocks: each
  counts its buffers (``#tpu.pipeline_mode<synchronous>`` 1, ``<double_buffered>`` 2, as Pallas'
  Mosaic lowering writes them for ``pl.Buffered(1|2)`` and for a whole-array block at a literal
  zero index: ``jax/_src/pallas/mosaic/lowering.py`` lines 1171-1178 and 1217-1235 and
  ``BlockMapping.has_trivial_window``, ``jax/_src/pallas/core.py`` lines 827-835, JAX 0.10.2;
  without a pipeline mode 2, or 1 when the grid, ``iteration_bounds``, has a single step or
  when the window's ``transform_indices`` reads no grid index of more than one step, as the
  TPU compiler measurably does), VMEM
  scratch operands count once, against the kernel's ``vmem_limit_bytes`` (the config's scoped
  memory size) or the chip's scoped default, never above its physical VMEM. Over the limit by
  at most 1/32 of it is a warning (``vmem_uncertain``), not a refusal: the real-chip outcomes
  the rule is calibrated on, and why, are in docs/vmem-calibration.md. A dynamic grid bound
  only decides between 1 and 2 buffers: it is counted as many steps (the worst case); a block
  whose shape is not static cannot be bounded and fails.

A kernel this module cannot read raises :class:`~jaxbench.evaluator.judge.custom_calls.Unreadable`
(a problem, never a pass).
"""

from __future__ import annotations

import base64
import json
import math
import re
from typing import TYPE_CHECKING, Any

from jaxbench.backends.chips import MiB, chip_or_default, vmem_verdict
from jaxbench.contract import Finding, Rule
from jaxbench.evaluator.judge.custom_calls import Unreadable, int_attr, sym

if TYPE_CHECKING:
    from jaxbench.contract.records import KernelFigures

VMEM = "#tpu.memory_space<vmem>"
NOT_VMEM = ("#tpu.memory_space<any>", "#tpu.memory_space<hbm>", "#tpu.memory_space<smem>",
            "#tpu.memory_space<semaphore_mem>", "#tpu.memory_space<host>")


# -- TPU: the Mosaic kernel of one tpu_custom_call --------------------------------------------

def _mosaic(config: dict[str, Any], jmlir: Any, ir: Any) -> Any:
    try:
        from jax._src.lib import tpu
    except ImportError:  # pragma: no cover - other layouts
        from jaxlib.mosaic.python import tpu
    from jaxlib.mlir.passmanager import PassManager

    body = base64.b64decode(config["custom_call_config"]["body"], validate=True)
    ctx = jmlir.make_ir_context()
    tpu.register_dialect(ctx)
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(body)
        if config["custom_call_config"].get("serialization_format"):
            PassManager.parse("builtin.module(mosaic-serde{serialize=false})").run(
                module.operation)
    return ctx, module


def _element_bytes(element: Any, ir: Any) -> int:
    for cls in ("IntegerType", "FloatType"):
        try:
            return max(1, -(-int(getattr(ir, cls)(element).width) // 8))
        except (ValueError, AttributeError, TypeError):
            continue
    text = str(element)
    if text == "index":
        return 8
    match = re.match(r"^[a-z]*?(\d+)", text)
    if not match:
        raise Unreadable(f"an operand of element type {text} whose size is unknown")
    return max(1, -(-int(match.group(1)) // 8))


def _vmem_limit(config: dict[str, Any], device_kind: str) -> tuple[int, int, str]:
    found = chip_or_default(device_kind, "tpu")
    scoped, physical = found.scoped_vmem, found.physical_vmem
    asked = [int(c.get("size", 0)) for c in config.get("scoped_memory_configs") or []
             if isinstance(c, dict) and int(c.get("memory_space", -1)) == 1]
    if asked and max(asked) > 0:
        value = max(asked)
        return min(value, physical), physical, f"its vmem_limit_bytes {value / MiB:g} MiB"
    return scoped, physical, f"the scoped default {scoped / MiB:g} MiB"


def _window_symbol(window: Any, key: str, ir: Any) -> str | None:
    if window is None or key not in window:
        return None
    try:
        return ir.FlatSymbolRefAttr(window[key]).value
    except ValueError:
        return None


def _invariant(transform: Any, bounds: list[int]) -> bool:
    """Whether a window's block index is the same at every grid step: no result of its
    ``transform_indices`` function depends on a grid index whose bound is not 1 (a dynamic
    bound counts as many steps) or on a scalar-prefetch operand. Values computed inside an op
    with regions depend on everything that op's body reads."""
    try:
        block = transform.regions[0].blocks[0]
    except (IndexError, AttributeError):
        return False
    # Grid indices of more than one step vary; so do scalar-prefetch operands (data), counted
    # as the sandbox's early rule counts them.
    varying: set[Any] = {arg for i, arg in enumerate(block.arguments)
                         if i >= len(bounds) or bounds[i] != 1}
    returned: list[Any] = []

    def reads_varying(op: Any) -> bool:
        found = any(v in varying for v in op.operands)
        for region in op.regions:
            for inner_block in region.blocks:
                for inner in inner_block.operations:
                    found = reads_varying(inner) or found
        if found:
            varying.update(op.results)
        return found

    for op in block.operations:
        reads_varying(op)
        if op.name in ("func.return", "return"):
            returned = list(op.operands)
    return bool(returned) and not any(v in varying for v in returned)


def _entry_rows(func: Any, ir: Any, n_results: int,
                functions: dict[str | None, Any] | None = None
                ) -> tuple[list[tuple], list[int] | None]:
    """(name, shape, buffers, bytes) per VMEM block and scratch of one Mosaic kernel function,
    and its grid (None when dynamic). ``functions``: the module's functions by name (a
    window's ``transform_indices``)."""
    attrs = func.attributes
    inputs = list(ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value).inputs)
    bounds = [int(b) for b in ir.DenseI64ArrayAttr(attrs["iteration_bounds"])] \
        if "iteration_bounds" in attrs else []
    dynamic = any(b < 0 for b in bounds)
    steps = math.prod(bounds) if bounds and not dynamic else 1
    prefetch = int_attr(attrs["scalar_prefetch"], ir) if "scalar_prefetch" in attrs else 0
    scratch = int_attr(attrs["scratch_operands"], ir) if "scratch_operands" in attrs else 0
    operands = inputs[len(bounds) + prefetch:len(inputs) - scratch]
    windows = [ir.DictAttr(w) for w in ir.ArrayAttr(attrs["window_params"])] \
        if "window_params" in attrs else [None] * len(operands)
    if len(windows) != len(operands) or scratch < 0 or prefetch < 0:
        raise Unreadable(f"{len(windows)} window parameters for {len(operands)} operands")
    n_in = len(operands) - n_results if 0 <= n_results <= len(operands) else len(operands)
    rows = []
    pieces = [(i, t, windows[i]) for i, t in enumerate(operands)] + \
        [(None, t, None) for t in inputs[len(inputs) - scratch:]]
    for position, (i, typ, window) in enumerate(pieces):
        if i is None:
            name = f"scratch {position - len(operands)}"
        else:
            name = f"input {i}" if i < n_in else f"output {i - n_in}"
        try:
            memref = ir.MemRefType(typ)
        except ValueError:
            continue  # semaphores as values, scalars
        space = str(memref.memory_space) if memref.memory_space is not None else VMEM
        if space != VMEM and (space in NOT_VMEM or "vmem" not in space):
            continue
        if not memref.has_static_shape:
            grid = " of a dynamic grid" if dynamic else ""
            raise Unreadable(f"cannot bound the VMEM budget{grid}: {name}'s block {memref} "
                             "has no static shape")
        shape = tuple(int(d) for d in memref.shape)
        nbytes = math.prod(shape) * _element_bytes(memref.element_type, ir)
        buffers = 1
        if i is not None:
            mode = str(window["pipeline_mode"]) if window is not None and \
                "pipeline_mode" in window else ""
            if "synchronous" in mode:
                buffers = 1
            elif mode:
                buffers = 2  # double_buffered, or a mode this reader does not know: the most
            elif dynamic or steps > 1:
                # One buffer for a window whose block index never changes (nothing to prefetch):
                # as measured on a TPU v5e (docs/vmem-calibration.md), even where Pallas leaves
                # the pipeline mode to the compiler (an index map that is not literally zeros).
                transform = (functions or {}).get(_window_symbol(window, "transform_indices", ir))
                buffers = 1 if transform is not None and _invariant(transform, bounds) else 2
            else:
                buffers = 1
        rows.append((name, shape, buffers, nbytes * buffers))
    return rows, None if dynamic else bounds


def tpu_kernel(call: Any, ir: Any, jmlir: Any, device_kind: str) -> tuple[str, KernelFigures]:
    """(problem or '', figures) for one ``tpu_custom_call``; raises Unreadable. A problem is a
    :class:`~jaxbench.contract.Finding` (``Rule.VMEM_BUDGET``)."""
    try:
        config = json.loads(ir.StringAttr(call.attributes["backend_config"]).value)
        ctx, module = _mosaic(config, jmlir, ir)
    except Exception as exc:  # noqa: BLE001 - any unreadable kernel is a problem
        raise Unreadable(f"its Mosaic kernel cannot be read ({type(exc).__name__}: "
                         f"{str(exc)[:200]})") from None
    with ctx:
        # The kernel function (Pallas' has dimension_semantics); a forged module's other
        # functions with VMEM operands are checked as kernels too.
        entries = [op.operation for op in module.body.operations
                   if op.operation.name == "func.func"
                   and ("dimension_semantics" in op.operation.attributes
                        or VMEM in str(op.operation.attributes["function_type"]))]
        if not entries:
            raise Unreadable("its Mosaic module has no kernel function")
        functions = {sym(op.operation, "sym_name", ir): op.operation
                     for op in module.body.operations if op.operation.name == "func.func"}
        limit, physical, why = _vmem_limit(config, device_kind)
        figures: KernelFigures = {"vmem_bytes": 0, "vmem_limit_bytes": limit}
        problem = ""
        for func in entries:
            name = sym(func, "sym_name", ir) or "?"
            rows, grid = _entry_rows(func, ir, len(call.results), functions)
            total = sum(r[3] for r in rows)
            if total >= figures["vmem_bytes"]:
                figures.update({"vmem_bytes": total, "name": name,
                                "grid": grid if grid is not None else "dynamic"})
            verdict = vmem_verdict(total, limit, physical)
            if verdict == "uncertain":
                figures["vmem_uncertain"] = True  # the parent warns (docs/vmem-calibration.md)
            if verdict != "over" or problem:
                continue
            worst = sorted(rows, key=lambda r: -r[3])[:4]
            listed = ", ".join(f"{n} block {shape} x{bufs} = {b / MiB:.1f} MiB"
                               for n, shape, bufs, b in worst)
            over = "the chip's physical VMEM" if total > physical else why
            counted = " (dynamic grid: counted as many steps)" if grid is None else ""
            problem = Finding(f"kernel {name} needs {total / MiB:.1f} MiB of VMEM on "
                              f"{device_kind}, over {over} (limit {limit / MiB:g} MiB, physical "
                              f"{physical / MiB:g} MiB){counted}: {listed}. Use smaller blocks "
                              "(or raise vmem_limit_bytes in pltpu.CompilerParams, up to the "
                              "physical size)", Rule.VMEM_BUDGET)
    return problem, figures


__all__ = ["tpu_kernel"]
