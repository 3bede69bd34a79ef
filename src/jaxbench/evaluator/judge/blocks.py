"""Block shapes of a ``pallas_call``'s block mappings, shared by the rules that read them (the
untrusted rules, the coverage of outputs, the kernel-work counter's aliased outputs)."""

from __future__ import annotations

from typing import Any

import numpy as np


def block_dims(block_mapping: Any) -> tuple[int, ...]:
    """The block's size in each dimension: ints as they are; squeezed (``None``) dimensions
    count 1; ``Element``/``Blocked`` wrappers their ``block_size`` (1 when it is not static)."""
    dims = []
    for dim in block_mapping.block_shape:
        if isinstance(dim, (int, np.integer)):
            dims.append(int(dim))
        elif dim is None or type(dim).__name__ == "Squeezed":
            dims.append(1)
        else:
            size = getattr(dim, "block_size", None)
            dims.append(int(size) if isinstance(size, (int, np.integer)) else 1)
    return tuple(dims)


def memory_space(block_mapping: Any) -> str | None:
    """The block's memory space, lower case ("any" where the kernel moves the operand itself,
    by DMA); None where the mapping cannot say (Mosaic GPU's transformed blocks refuse to give
    their block type)."""
    try:
        aval = getattr(block_mapping, "block_aval", None)
    except Exception:  # noqa: BLE001 - e.g. "Lowering failed to handle transforms"
        return None
    return str(getattr(aval, "memory_space", "")).lower()


def unplaced(block_mapping: Any) -> bool:
    """Whether the block's placement is not the index map's alone: memory the kernel moves
    itself (``ANY``), or a memory space the mapping cannot say."""
    space = memory_space(block_mapping)
    return space is None or "any" in space


def block_kind(dim: Any) -> tuple[str, int] | None:
    """(kind, size) of one block dimension: ``blocked`` (index times size), ``element`` (an
    element offset) or ``squeezed`` (one element); None for anything else."""
    kind = type(dim).__name__
    if dim is None or kind == "Squeezed":
        return "squeezed", 1
    if kind == "Blocked":
        return "blocked", int(dim.block_size)
    if kind == "Element":
        return "element", int(dim.block_size)
    if isinstance(dim, int):
        return "blocked", dim
    return None


def gaps(starts: np.ndarray, size: int, extent: int) -> list[tuple[int, int]]:
    """The ranges of ``[0, extent)`` that no ``[start, start + size)`` covers."""
    covered = np.zeros(extent + 1, np.int64)
    for start in np.unique(starts):
        lo, hi = max(int(start), 0), min(int(start) + size, extent)
        if lo < hi:
            covered[lo] += 1
            covered[hi] -= 1
    inside = np.cumsum(covered)[:extent] > 0
    gaps, i = [], 0
    while i < extent:
        if inside[i]:
            i += 1
            continue
        j = i
        while j < extent and not inside[j]:
            j += 1
        gaps.append((i, j))
        i = j
    return gaps
