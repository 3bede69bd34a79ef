"""Where the set elements of a boolean mask over an output lie, in words: the parent's
mismatch messages (:func:`jaxbench.evaluator.parent.compare.check_outputs`) and the trusted
runner's (two fills of uninitialised memory that differ) name places this way, never values."""

from __future__ import annotations

import math

import numpy as np


def _runs(flags: np.ndarray, limit: int = 3) -> str:
    """Index ranges (``a:b``, Python slices) where a 1-D mask is set; ``:`` when all of it."""
    if flags.all():
        return ":"
    edges = np.flatnonzero(np.diff(np.concatenate(([0], flags.astype(np.int8), [0]))))
    runs = [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    shown = ", ".join(f"{a}:{b}" if b - a > 1 else str(a) for a, b in runs[:limit])
    if len(runs) > limit:
        shown += f", ... ({len(runs)} ranges in {runs[0][0]}:{runs[-1][1]})"
    return shown if len(runs) == 1 else "{" + shown + "}"


def where(mask: np.ndarray) -> str:
    """Where the set elements of a mask lie, per axis (without materializing their indices):
    ``[480:512, :] (every element there)``, or ``within [...]`` plus the first one."""
    if mask.ndim == 0:
        return ""
    per_axis = [mask.any(axis=tuple(a for a in range(mask.ndim) if a != axis))
                for axis in range(mask.ndim)]
    box = "[" + ", ".join(_runs(flags) for flags in per_axis) + "]"
    count = int(mask.sum())
    if count == math.prod(int(flags.sum()) for flags in per_axis):
        return f"at {box} (every element there)"
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))
    return f"within {box}, first at {first}"
