"""On-chip memory budgets read from the exported target modules (trusted side).

The parent hands the runner the target export at every size the task defines; this module
reads each kernel the chip would compile out of those modules (never out of anything the
untrusted side reports) and applies the chip's limits:

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
- **GPU (Triton)**: every tensor type in a Triton kernel's IR has a power-of-two number of
  elements (so every dimension is a power of two) and at most 2^20 of them (Triton's
  ``TRITON_MAX_TENSOR_NUMEL``). Mosaic GPU kernels are not Triton programs and are not checked.

A kernel this module cannot read is a problem, never a pass. Never imports the sandbox.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from jaxbench.backends.chips import (
    DEFAULT_GPU,
    DEFAULT_TPU,
    MiB,
    chip_or_default,
    vmem_verdict,
)
from jaxbench.contract import Finding, Rule

if TYPE_CHECKING:
    from jax.export import Exported

    from jaxbench.evaluator.judge.memory_rules import KernelFigures

MAX_NUMEL = 1 << 20  # Triton's TRITON_MAX_TENSOR_NUMEL
TPU_TARGET = "tpu_custom_call"
TRITON_TARGET = "__gpu$xla.gpu.triton"
MOSAIC_GPU_TARGETS = ("mosaic_gpu", "mosaic_gpu_v2")
REGION = re.compile(r"jaxbench_kernel_(\d+)")
VMEM = "#tpu.memory_space<vmem>"
NOT_VMEM = ("#tpu.memory_space<any>", "#tpu.memory_space<hbm>", "#tpu.memory_space<smem>",
            "#tpu.memory_space<semaphore_mem>", "#tpu.memory_space<host>")


class Unreadable(ValueError):
    """A kernel whose budget cannot be read or bounded from the module."""


def _ir() -> tuple[Any, Any]:
    from jaxbench.evaluator.judge.mlir import mlir_bindings

    return mlir_bindings()


def _plain_context(jmlir: Any) -> Any:
    ctx = jmlir.make_ir_context()
    ctx.allow_unregistered_dialects = True
    return ctx


# -- the kernel custom calls of a module, with the kernel region each sits in ------------------

def _ops(op: Any) -> Iterator[Any]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _ops(inner.operation)


def _sym(op: Any, name: str, ir: Any) -> str | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    try:
        return ir.StringAttr(attr).value
    except ValueError:
        try:
            return ir.FlatSymbolRefAttr(attr).value
        except ValueError:
            return None


def _kernel_calls(module: Any, ir: Any, targets: tuple[str, ...]) -> list[tuple[int | None, Any]]:
    """(pallas_call index from its ``jaxbench_kernel_<i>`` region or None, custom call op) for
    every custom call to ``targets`` reachable from ``@main``, in module order."""
    funcs = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func":
            funcs[_sym(op, "sym_name", ir)] = op
    found: list[tuple[int | None, Any]] = []
    seen: set[tuple[str, int | None]] = set()

    def visit(name: str, index: int | None, stack: tuple[str, ...]) -> None:
        if name in stack or name not in funcs or (name, index) in seen:
            return
        seen.add((name, index))
        match = REGION.search(name)
        if match:
            index = int(match.group(1))
        for op in _ops(funcs[name]):
            if op.name == "stablehlo.custom_call":
                if _sym(op, "call_target_name", ir) in targets:
                    found.append((index, op))
            elif op.name == "func.call":
                callee = _sym(op, "callee", ir)
                if callee is not None:
                    visit(callee, index, (*stack, name))

    visit("main", None, ())
    return found


def _label(index: int | None) -> str:
    return f"pallas_call #{index}" if index is not None else "a kernel outside the kernel regions"


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


def _int(attr: Any, ir: Any) -> int:
    return int(ir.IntegerAttr(attr).value)


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
    prefetch = _int(attrs["scalar_prefetch"], ir) if "scalar_prefetch" in attrs else 0
    scratch = _int(attrs["scratch_operands"], ir) if "scratch_operands" in attrs else 0
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
        functions = {_sym(op.operation, "sym_name", ir): op.operation
                     for op in module.body.operations if op.operation.name == "func.func"}
        limit, physical, why = _vmem_limit(config, device_kind)
        figures: KernelFigures = {"vmem_bytes": 0, "vmem_limit_bytes": limit}
        problem = ""
        for func in entries:
            name = _sym(func, "sym_name", ir) or "?"
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


# -- GPU: Triton's tensor rules on one Triton kernel's IR --------------------------------------

def _plain_parse(data: bytes, jmlir: Any, ir: Any) -> tuple[Any, Any]:
    ctx = _plain_context(jmlir)
    return ctx, ir.Module.parse(data, context=ctx)


class _RuleBroken(Exception):
    """The Triton dialect's verifier refused the IR for one of the tensor rules."""


# What the Triton dialect's verifier says about the two tensor rules (TensorSizeTrait).
_VERIFIER_RULES = (("Maximum allowed number of elements", "max_elements"),
                   ("power-of-two", "power_of_two"), ("power of two", "power_of_two"))


def _triton_parse(data: bytes, ir: Any) -> tuple[Any, Any]:
    """The Triton IR parsed (and verified) with jaxlib's Triton dialect."""
    from jaxbench import compat

    try:
        with compat.triton_ir_context() as ctx:
            return ctx, ir.Module.parse(data, context=ctx)
    except Exception as exc:  # noqa: BLE001
        text = str(exc)
        for words, rule in _VERIFIER_RULES:
            if words in text:
                line = next((x for x in text.splitlines() if words in x), text)
                line = line.split("): ", 1)[-1] if "): " in line else line
                raise _RuleBroken(f"Triton rule {rule}: the Triton dialect's verifier refuses "
                                  f"the kernel: {line.strip()[:300]}") from None
        raise Unreadable(f"its Triton IR cannot be read ({type(exc).__name__}: "
                         f"{text[:200]})") from None


def _triton_name(module: Any, ir: Any) -> str:
    """The kernel function's name (a property, not an attribute, of an unregistered tt.func)."""
    for op in module.body.operations:
        op = op.operation
        if "sym_name" in op.attributes:
            return _sym(op, "sym_name", ir) or "?"
        match = re.search(r'sym_name = "([^"]{1,200})"', op.get_asm(large_elements_limit=1)[:4000])
        if match:
            return match.group(1)
    return "?"


def triton_kernel(call: Any, ir: Any, jmlir: Any) -> tuple[str, KernelFigures]:
    """(problem or '', figures) for one Triton custom call; raises Unreadable. A problem is a
    :class:`~jaxbench.contract.Finding` (``Rule.TRITON_RULE``)."""
    try:
        config = ir.DictAttr(call.attributes["mhlo.backend_config"])
        data = ir.StringAttr(config["ir"]).value_bytes
        figures: KernelFigures = {}
        for key in ("num_warps", "num_stages"):
            if key in config:
                figures[key] = _int(config[key], ir)
        named = ir.StringAttr(config["name"]).value if "name" in config else ""
    except Exception as exc:  # noqa: BLE001
        raise Unreadable(f"its Triton IR cannot be read ({type(exc).__name__}: "
                         f"{str(exc)[:200]})") from None
    try:
        # Without the Triton dialect first: its verifier stops at the first tensor that breaks
        # a rule (with a terser message); here every type is read.
        ctx, module = _plain_parse(data, jmlir, ir)
    except Exception:  # noqa: BLE001 - some attributes need the dialect to be read
        try:
            ctx, module = _triton_parse(data, ir)
        except _RuleBroken as broken:
            return Finding(str(broken), Rule.TRITON_RULE), figures
    with ctx:
        name = named or _triton_name(module, ir)
        figures["name"] = name
        largest, problem = 0, ""
        for op in _ops(module.operation):
            types = [(r.type, op.name) for r in op.results]
            for region in op.regions:
                for block in region.blocks:
                    types += [(a.type, f"{op.name} argument") for a in block.arguments]
            for typ, made_by in types:
                try:
                    tensor = ir.RankedTensorType(typ)
                except ValueError:
                    continue
                if not tensor.has_static_shape:
                    raise Unreadable(f"tensor {typ} ({made_by}) has no static shape")
                numel = math.prod(int(d) for d in tensor.shape)
                largest = max(largest, numel)
                if problem:
                    continue
                if numel > MAX_NUMEL:
                    problem = Finding(f"Triton rule max_elements: kernel {name}: tensor {typ} "
                                      f"({made_by}) has {numel:,} elements, over Triton's limit "
                                      f"of 2^20 = {MAX_NUMEL:,}. Load smaller pieces and loop "
                                      "inside the kernel", Rule.TRITON_RULE)
                elif numel & (numel - 1):
                    problem = Finding(f"Triton rule power_of_two: kernel {name}: tensor {typ} "
                                      f"({made_by}) has {numel:,} elements, not a power of two. "
                                      "Use power-of-two tiles; mask or pad the edges",
                                      Rule.TRITON_RULE)
        figures["largest_tensor_elements"] = largest
    return problem, figures


# -- every kernel at every size -----------------------------------------------------------------

def check(exported_by_size: dict[str, Exported], platform: str, tpu_kind: str = DEFAULT_TPU,
          gpu_kind: str = DEFAULT_GPU) -> tuple[str, list[KernelFigures]]:
    """The first budget problem over the kernels of the target exports, size by size ('' if
    none; a :class:`~jaxbench.contract.Finding` with its rule code: a module or
    kernel that cannot be read is the platform's memory budget, ``Rule.VMEM_BUDGET`` or
    ``Rule.SMEM_BUDGET``), and the figures per kernel per size (every size, even after a
    problem)."""
    jmlir, ir = _ir()
    budget = Rule.VMEM_BUDGET if platform == "tpu" else Rule.SMEM_BUDGET
    targets = (TPU_TARGET,) if platform == "tpu" else (TRITON_TARGET, *MOSAIC_GPU_TARGETS)
    first = ""
    figures: list[KernelFigures] = []
    for size, exported in exported_by_size.items():
        problem = ""
        try:
            ctx = _plain_context(jmlir)
            with ctx:
                module = ir.Module.parse(exported.mlir_module())
                calls = _kernel_calls(module, ir, targets)
                if not calls:
                    problem = Finding(f"memory budget at size {size!r}: the {platform} module "
                                      "has no kernel call to check", budget)
                for index, call in calls:
                    target = _sym(call, "call_target_name", ir)
                    if target in MOSAIC_GPU_TARGETS:
                        figures.append({"kernel": index, "size": size, "backend": "mosaic_gpu"})
                        continue
                    try:
                        found, numbers = tpu_kernel(call, ir, jmlir, tpu_kind) \
                            if platform == "tpu" else triton_kernel(call, ir, jmlir)
                    except Unreadable as exc:
                        found, numbers = f"cannot check its budget: {exc}", {}
                    figures.append({"kernel": index, "size": size, **numbers})
                    if found and not problem:
                        what = "Triton's rules" if found.startswith("Triton rule") else \
                            "memory budget"
                        problem = Finding(f"{what} at size {size!r}, {_label(index)}: {found}",
                                          getattr(found, "rule", budget))
        except Exception as exc:  # noqa: BLE001 - a module the judge cannot read is a problem
            problem = Finding(f"memory budget at size {size!r}: the module cannot be read "
                              f"({type(exc).__name__}: {str(exc)[:200]})", budget)
        first = first or problem
    return first, figures


__all__ = ["MAX_NUMEL", "Unreadable", "check", "tpu_kernel", "triton_kernel"]
