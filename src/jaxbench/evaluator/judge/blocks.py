"""Block shapes of a ``pallas_call``'s block mappings, shared by the untrusted rules."""

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
