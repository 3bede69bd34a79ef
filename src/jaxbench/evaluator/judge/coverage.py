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

The same fills also expose block padding read at an input's edge: a block shape that does not
divide the input, on a ``pl.cdiv`` grid, makes the last block along that dimension read past
the array, and what it reads there is unspecified (the interpreter fills it at random). Along
an axis an output block moves with, that padding only reaches output elements that are never
written back; along a reduction axis (one that no output's block moves with) it is summed
into every output the block feeds. :func:`edge_reads` names those reads, with the input, its
block, the grid steps and how far they read past the edge, and :func:`uninitialised_message`
builds the verdict from both.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from jaxbench import compat
from jaxbench.evaluator.judge.blocks import block_kind, gaps, unplaced
from jaxbench.evaluator.judge.kernel_work import MAX_PROGRAMS, Values

__all__ = ["uncovered", "describe", "edge_reads", "describe_edge_reads",
           "uninitialised_message"]


class OutputGap(TypedDict):
    """One dimension of a kernel output its grid leaves partly unwritten (:func:`uncovered`)."""

    output: int  # its index among the kernel's outputs
    shape: tuple[int, ...]
    axis: int
    gaps: list[tuple[int, int]]  # the unwritten ranges [start, end) along ``axis``
    block: tuple[int, ...]  # the block shape
    grid: tuple[int, ...]


class EdgeRead(TypedDict):
    """One dimension of a kernel input whose last blocks read past the input's edge along a
    reduction axis of the grid (:func:`edge_reads`)."""

    input: int  # its index among the kernel's (blocked) inputs
    shape: tuple[int, ...]
    axis: int  # the input's dimension
    block: tuple[int, ...]  # the block shape
    grid: tuple[int, ...]
    grid_axes: tuple[int, ...]  # the reduction axes of the grid that move it along ``axis``
    steps: list[tuple[int, ...]]  # those axes' values at which a block reads past the edge
    padding: int  # how many elements along ``axis`` the farthest block reads past the edge


def _indices(values: Values, block: Any, ids: list[Any], programs: int) -> list[Any] | None:
    """Each dimension's block index, per program (an array of ``programs``), or None."""
    index_map = getattr(block.index_map_jaxpr, "jaxpr", block.index_map_jaxpr)
    if len(index_map.invars) != len(ids):
        return None
    env = values.run(index_map, list(ids))
    indices = [values.of(v, env) for v in index_map.outvars]
    if any(i is None for i in indices):
        return None
    return [np.broadcast_to(np.asarray(i, np.int64), (programs,)) for i in indices]


def _moves(index: np.ndarray, grid: tuple[int, ...]) -> set[int]:
    """The grid axes along which a per-program block index changes."""
    shaped = index.reshape(grid)
    return {g for g in range(len(grid)) if np.ptp(shaped, axis=g).any()}


def _input_edge_reads(eqn: Any) -> list[EdgeRead]:
    mapping = eqn.params.get("grid_mapping")
    grid = tuple(getattr(mapping, "grid", ()) or ())
    if mapping is None or not grid or not all(isinstance(g, int) and g > 0 for g in grid):
        return []
    programs = int(np.prod(grid))
    if programs > MAX_PROGRAMS or int(getattr(mapping, "num_index_operands", 0) or 0):
        return []
    n_in = int(getattr(mapping, "num_inputs", 0))
    mappings = list(getattr(mapping, "block_mappings", ()))
    ids = [a.reshape(-1) for a in np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")]
    values = Values(ids, grid)
    # the grid axes some output's block moves with; the others are reduction axes
    output_axes: set[int] = set()
    for block in mappings[n_in:]:
        indices = _indices(values, block, ids, programs)
        if indices is None:
            return []  # an output the judge cannot place: no axis is known to be a reduction
        for index in indices:
            output_axes |= _moves(index, grid)
    found: list[EdgeRead] = []
    for j, block in enumerate(mappings[:n_in]):
        if unplaced(block):
            continue
        aval = getattr(block, "array_aval", None) or getattr(block, "array_shape_dtype", None)
        shape = tuple(int(d) for d in getattr(aval, "shape", ()))
        dims = [block_kind(d) for d in block.block_shape]
        if None in dims or len(dims) != len(shape):
            continue
        indices = _indices(values, block, ids, programs)
        if indices is None or len(indices) != len(shape):
            continue
        for axis, ((kind, size), index, extent) in enumerate(zip(dims, indices, shape,
                                                                 strict=True)):
            if kind != "blocked" or extent % size == 0:
                continue
            ends = index * size + size
            past = ends > extent
            reduction = tuple(sorted(_moves(index, grid) - output_axes))
            if not past.any() or not reduction:
                continue
            coords = [c[past] for c in ids]
            steps = sorted({tuple(int(coords[g][p]) for g in reduction)
                            for p in range(int(past.sum()))})
            found.append({"input": j, "shape": shape, "axis": axis,
                          "block": tuple(s for _, s in dims), "grid": grid,
                          "grid_axes": reduction, "steps": steps,
                          "padding": int(ends.max()) - extent})
    return found


def edge_reads(closed: Any) -> list[EdgeRead]:
    """Per kernel input, each dimension along which blocks read block padding past the input's
    edge (a block that does not divide it, on a ``pl.cdiv`` grid) at steps of a reduction axis
    of the grid, where that padding feeds the outputs. Kernels are found at any depth."""
    found = []
    for eqn in compat.walk_eqns(getattr(closed, "jaxpr", closed), 100_000):
        if compat.is_kernel(eqn):
            found += _input_edge_reads(eqn)
    return found


def describe_edge_reads(found: list[EdgeRead], limit: int = 3) -> str:
    """The entries of :func:`edge_reads`, as the verdict's words."""
    parts = []
    for entry in found[:limit]:
        axes = entry["grid_axes"]
        named = (f"grid axis {axes[0]}" if len(axes) == 1
                 else "grid axes " + ", ".join(str(a) for a in axes))
        steps = ", ".join(str(s[0]) if len(s) == 1 else str(s) for s in entry["steps"][:4])
        extent, size = entry["shape"][entry["axis"]], entry["block"][entry["axis"]]
        parts.append(f"kernel input {entry['input']} of shape {entry['shape']}: blocks "
                     f"{entry['block']} over the grid {entry['grid']} read up to "
                     f"{entry['padding']} elements of block padding past its edge along "
                     f"dimension {entry['axis']} (block {size} does not divide {extent}) at "
                     f"step{'s' if len(entry['steps']) > 1 else ''} {steps} of {named}, a "
                     "reduction axis (no output block moves with it), so the padding's "
                     "unspecified values reach the outputs")
    if len(found) > limit:
        parts.append(f"{len(found) - limit} more")
    return "; ".join(parts)


def uninitialised_message(differ: list[str], traced: Any = None) -> str:
    """The verdict when two random fills of uninitialised memory give different outputs:
    ``differ`` says where (one phrase per output that differs), and from ``traced`` (the jaxpr
    lowered) the output ranges the grid never writes and the block padding read at an input's
    edge along a reduction axis, each where the judge can tell; never a value of either run."""
    message = ("the outputs depend on uninitialised memory (e.g. block padding at an array's "
               "edge read into a reduction, an output never written, or scratch read before "
               "it is written): two runs on the same inputs, with that memory filled with "
               f"different random bits, differ: {'; '.join(differ)}")
    if traced is None:
        return message
    for find, words, prefix in (
            (uncovered, describe, "The grid does not cover every output"),
            (edge_reads, describe_edge_reads,
             "Block padding at an input's edge is read into a reduction (mask the last "
             "block's out-of-range part, e.g. with jnp.where on its global indices, or choose "
             "a block that divides the dimension)")):
        try:
            detail = words(find(traced))
        except Exception:  # noqa: BLE001 - only the message's detail: the verdict stands
            detail = ""
        if detail:
            message += f". {prefix}: {detail}"
    return message


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
        if unplaced(block):
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
