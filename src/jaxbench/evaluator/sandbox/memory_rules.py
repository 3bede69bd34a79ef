"""On-chip memory budgets per ``pallas_call``, from a trace alone (untrusted side: add-only).

Correctness runs at the ``small`` size; a kernel whose blocks fit there can
still need more on-chip memory than the chip has at ``full`` size (a whole
weight matrix as one block). Tracing is abstract and cheap at any size, so the
tracer traces every size the task defines and checks each kernel:

- **TPU (Mosaic)**: every pipelined block (memory space VMEM, the default)
  times its buffer count (2, or ``pl.Buffered(n)``; 1 for a whole-array block at a fixed
  index, which Mosaic single-buffers; 1 when the grid has a
  single step, as nothing is prefetched), plus VMEM scratch, against the
  kernel's ``vmem_limit_bytes`` if it sets one, else the chip's scoped default;
  never above the chip's physical VMEM. Over the limit is what Mosaic reports
  as ``RESOURCE_EXHAUSTED ... vmem`` on the chip.
- **GPU (Triton)**: Triton's rules on the kernel body's tensors (power-of-two sizes,
  at most 2^20 elements, masked edge blocks, a shared-memory estimate), in
  :mod:`jaxbench.evaluator.sandbox.triton_rules`. The bytes of the program's blocks
  are reported beside them (what a block holds is loaded in pieces the kernel
  chooses, so blocks themselves are not limited).

The figures per chip are in :data:`jaxbench.evaluator.judge.budgets.TPU_VMEM`, with
their sources.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# The chip table lives on the trusted side, which computes the budgets that decide
# (judge/budgets.py); the untrusted rule reads the same figures.
from jaxbench.evaluator.judge.budgets import TPU_VMEM, MiB
from jaxbench.evaluator.sandbox.blocks import block_dims


def _space(aval: Any) -> str:
    return str(getattr(aval, "memory_space", None) or "default").lower()


def _limit(eqn: Any, device_kind: str) -> tuple[int, int, str]:
    scoped, physical = TPU_VMEM.get(device_kind, TPU_VMEM["TPU v6 lite"])
    params = eqn.params.get("compiler_params")
    if isinstance(params, dict):  # older JAX: {"mosaic": {...}} / {"mosaic_tpu": ...}
        params = next(iter(params.values()), None)
    asked = getattr(params, "vmem_limit_bytes", None)
    if isinstance(params, dict):
        asked = params.get("vmem_limit_bytes")
    if asked:
        return min(int(asked), physical), physical, f"its vmem_limit_bytes {int(asked) / MiB:g} MiB"
    return scoped, physical, f"the scoped default {scoped / MiB:g} MiB"


def _whole_and_fixed(block: Any) -> bool:
    """A block that is the whole array at a fixed (all-zero) index: Mosaic's lowering marks such
    a window single-buffered (``pipeline_mode<synchronous>`` in the kernel's IR), as nothing
    changes between grid steps; the judge reads that mode from the exported module."""
    if tuple(block_dims(block)) != tuple(block.array_aval.shape):
        return False
    jaxpr = getattr(block.index_map_jaxpr, "jaxpr", None)
    outs = getattr(jaxpr, "outvars", None)
    if jaxpr is None or outs is None or jaxpr.eqns:
        return False
    return all(type(v).__name__ == "Literal" and int(getattr(v, "val", 1)) == 0 for v in outs)


def tpu_vmem(eqn: Any, device_kind: str) -> tuple[str, dict[str, Any]]:
    """(problem or '', figures) for one TPU ``pallas_call``."""
    mapping = eqn.params["grid_mapping"]
    steps = math.prod(int(g) for g in mapping.grid) if mapping.grid else 1
    rows = []
    for i, block in enumerate(mapping.block_mappings):
        if _space(block.transformed_block_aval) not in ("default", "vmem", "memoryspace.vmem"):
            continue  # ANY/HBM (manual DMA), SMEM
        mode = block.pipeline_mode
        buffers = int(getattr(mode, "buffer_count", 0) or 0) or (
            1 if steps <= 1 or _whole_and_fixed(block) else 2)
        nbytes = math.prod(block_dims(block)) * np.dtype(block.array_aval.dtype).itemsize
        kind = "input" if i < mapping.num_inputs else "output"
        rows.append((f"{kind} {i if i < mapping.num_inputs else i - mapping.num_inputs}",
                     tuple(block_dims(block)), buffers, nbytes * buffers))
    for j, aval in enumerate(mapping.scratch_avals):
        if "vmem" not in _space(aval) or not hasattr(aval, "shape"):
            continue
        rows.append((f"scratch {j}", tuple(aval.shape), 1,
                     math.prod(aval.shape) * np.dtype(aval.dtype).itemsize))
    total = sum(r[3] for r in rows)
    limit, physical, why = _limit(eqn, device_kind)
    figures = {"vmem_bytes": total, "vmem_limit_bytes": limit}
    if total <= limit:
        return "", figures
    worst = sorted(rows, key=lambda r: -r[3])[:4]
    listed = ", ".join(f"{name} block {shape} x{bufs} = {b / MiB:.1f} MiB"
                       for name, shape, bufs, b in worst)
    over = "the chip's physical VMEM" if total > physical else why
    return (f"needs {total / MiB:.1f} MiB of VMEM on {device_kind}, over {over} "
            f"(limit {limit / MiB:g} MiB, physical {physical / MiB:g} MiB): {listed}. Use smaller "
            "blocks (or raise vmem_limit_bytes in pltpu.CompilerParams, up to the physical size)"
            ), figures


def gpu_blocks(eqn: Any, device_kind: str = "NVIDIA H200",
               locate: Any = None) -> tuple[str, dict[str, Any]]:
    """(problem or '', figures) for one GPU ``pallas_call``: Triton's rules
    (:mod:`jaxbench.evaluator.sandbox.triton_rules`) for Triton kernels."""
    from jaxbench.evaluator.sandbox import triton_rules

    mapping = eqn.params["grid_mapping"]
    nbytes = sum(math.prod(block_dims(b)) * np.dtype(b.array_aval.dtype).itemsize
                 for b in mapping.block_mappings)
    figures: dict[str, Any] = {"block_bytes": nbytes}
    if not triton_rules.is_triton(eqn):
        return "", figures
    found, numbers = triton_rules.check(eqn, device_kind, locate)
    figures.update(numbers)
    if not found:
        return "", figures
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{found[0]}{more}", figures


def check(closed: Any, target: str, size: str, device_kind: str, gpu_kind: str = "NVIDIA H200",
          locate: Any = None) -> tuple[str, list[dict[str, Any]]]:
    """The first budget problem among the kernels of a trace at ``size`` ('' if none), and the
    per-kernel figures."""
    from jaxbench.evaluator.sandbox.exporting import scan

    figures = []
    for index, eqn in enumerate(scan(closed).kernel_eqns):
        if eqn.primitive.name != "pallas_call":
            continue
        try:
            problem, numbers = tpu_vmem(eqn, device_kind) if target == "tpu" else \
                gpu_blocks(eqn, gpu_kind, locate)
        except Exception:  # noqa: BLE001 - an unusual grid spec: no figure, no verdict
            continue
        figures.append({"kernel": index, "size": size, **numbers})
        if problem:
            what = "Triton's rules" if problem.startswith("Triton rule") else "memory budget"
            return f"{what} at size {size!r}, pallas_call #{index}: {problem}", figures
    return "", figures
