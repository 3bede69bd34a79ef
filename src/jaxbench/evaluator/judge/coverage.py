"""Which parts of a kernel's outputs its grid never writes (trusted side, on the traced jaxpr).

A blocked output is written only where some program's block lands: a grid of ``n // b``
blocks of ``b`` leaves the last ``n % b`` elements of that dimension to whatever the buffer
held. When the two random fills of uninitialised memory give different outputs, the verdict
names these ranges with the block shape and the grid (:func:`uncovered`), so that the author
sees why. It describes; it decides nothing (an uncovered range XLA slices away is harmless,
and the two fills are the judge).

Every program's block index is evaluated exactly from the output's index map
(:class:`.kernel_work.Values`); an index map the judge cannot evaluate (one that reads
scalar prefetch, say), an output in ``ANY`` memory (written by DMA), an output aliased to an
input, or a grid over :data:`.kernel_work.MAX_PROGRAMS` is left out. Coverage is per
dimension: the union, over programs, of each dimension's block ranges.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from jaxbench import compat
from jaxbench.evaluator.judge.blocks import block_kind, gaps
from jaxbench.evaluator.judge.kernel_work import MAX_PROGRAMS, Values

__all__ = ["uncovered", "describe"]


class OutputGap(TypedDict):
    """One dimension of a kernel output its grid leaves partly unwritten (:func:`uncovered`)."""

    output: int  # its index among the kernel's outputs
    shape: tuple[int, ...]
    axis: int
    gaps: list[tuple[int, int]]  # the unwritten ranges [start, end) along ``axis``
    block: tuple[int, ...]  # the block shape
    grid: tuple[int, ...]


def _output_gaps(eqn: Any) -> list[OutputGap]:
    mapping = eqn.params.get("grid_mapping")
    grid = tuple(getattr(mapping, "grid", ()) or ())
    if mapping is None or not all(isinstance(g, int) and g > 0 for g in grid):
        return []
    programs = int(np.prod(grid)) if grid else 1
    if programs > MAX_PROGRAMS or int(getattr(mapping, "num_index_operands", 0) or 0):
        return []
    n_in = int(getattr(mapping, "num_inputs", 0))
    aliased = {int(o) for _, o in (eqn.params.get("input_output_aliases") or ())}
    ids = [a.reshape(-1) for a in np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")]
    values = Values(ids, grid)
    found: list[OutputGap] = []
    for j, outvar in enumerate(eqn.outvars):
        mappings = getattr(mapping, "block_mappings", ())
        if j in aliased or n_in + j >= len(mappings):
            continue
        block = mappings[n_in + j]
        if "any" in str(getattr(getattr(block, "block_aval", None), "memory_space", "")).lower():
            continue
        shape = tuple(int(d) for d in outvar.aval.shape)
        dims = [block_kind(d) for d in block.block_shape]
        index_map = getattr(block.index_map_jaxpr, "jaxpr", block.index_map_jaxpr)
        if None in dims or len(dims) != len(shape) or len(index_map.invars) != len(grid):
            continue
        env = values.run(index_map, list(ids))
        indices = [values.of(v, env) for v in index_map.outvars]
        if any(i is None for i in indices) or len(indices) != len(shape):
            continue
        for axis, ((kind, size), index, extent) in enumerate(zip(dims, indices, shape,
                                                                 strict=True)):
            starts = np.broadcast_to(np.asarray(index, np.int64), (programs,))
            if kind == "blocked":
                starts = starts * size
            missing = gaps(starts, size, extent)
            if missing:
                found.append({"output": j, "shape": shape, "axis": axis, "gaps": missing,
                              "block": tuple(s for _, s in dims), "grid": grid})
    return found


def uncovered(closed: Any) -> list[OutputGap]:
    """Per kernel output that its grid leaves partly unwritten, one entry per dimension with a
    gap: the output's index among the kernel's outputs, its shape, the axis, the unwritten
    ranges, the block shape and the grid. Kernels are found at any depth of calls."""
    found = []
    for eqn in compat.walk_eqns(getattr(closed, "jaxpr", closed), 100_000):
        if compat.is_kernel(eqn):
            found += _output_gaps(eqn)
    return found


def describe(found: list[OutputGap], limit: int = 3) -> str:
    """The entries of :func:`uncovered`, as the verdict's words."""
    parts = []
    for entry in found[:limit]:
        ranges = ", ".join(f"{a}:{b}" for a, b in entry["gaps"][:4])
        parts.append(f"kernel output {entry['output']} of shape {entry['shape']}: blocks "
                     f"{entry['block']} over the grid {entry['grid']} never write indices "
                     f"{ranges} of dimension {entry['axis']}")
    if len(found) > limit:
        parts.append(f"{len(found) - limit} more")
    return "; ".join(parts)
