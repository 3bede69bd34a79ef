"""The GPU grid race rule, checked on the traced jaxpr (untrusted side: it can only add a failure).

On a GPU every grid program runs in parallel. An output block written by two
programs is a race: right in the sequential interpreter, wrong on the chip (the
TPU pattern of accumulating into one output block along an "arbitrary" grid
axis is exactly such a race under Triton). For every ``pallas_call`` with a
blocked output, the output index map is evaluated for every grid point; two
grid points that map to the same block break the rule. Outputs whose block is
the whole array (kernels that index the output themselves) cannot be checked
this way and are left alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

MAX_PROGRAMS = 1 << 20


def _block_dims(block_mapping: Any) -> tuple[int, ...]:
    dims = []
    for dim in block_mapping.block_shape:
        if isinstance(dim, (int, np.integer)):
            dims.append(int(dim))
        else:  # squeezed / element / blocked wrappers
            size = getattr(dim, "block_size", None)
            dims.append(int(size) if isinstance(size, (int, np.integer)) else 1)
    return tuple(dims)


def _conflict(eqn: Any, call_index: int) -> str:
    import jax
    import jax.numpy as jnp

    from jaxbench import compat

    mapping = eqn.params["grid_mapping"]
    if mapping.num_index_operands:
        return ""
    try:
        grid = tuple(int(g) for g in mapping.grid)
    except TypeError:  # dynamic grid bounds
        return ""
    programs = math.prod(grid)
    if programs <= 1 or programs > MAX_PROGRAMS:
        return ""
    points = np.indices(grid).reshape(len(grid), -1).astype(np.int32)
    outputs = mapping.block_mappings[mapping.num_inputs: mapping.num_inputs + mapping.num_outputs]
    for out_index, block in enumerate(outputs):
        if _block_dims(block) == tuple(block.array_aval.shape):
            continue
        index_map = jax.vmap(compat.jaxpr_as_fun(block.index_map_jaxpr))
        blocks = index_map(*(jnp.asarray(points[axis]) for axis in range(len(grid))))
        table = np.stack([np.asarray(b).reshape(-1) for b in blocks], axis=1)
        _, first, counts = np.unique(table, axis=0, return_index=True, return_counts=True)
        if (counts > 1).any():
            row = table[first[int(np.argmax(counts > 1))]]
            clash = np.nonzero((table == row).all(axis=1))[0][:2]
            a, b = (tuple(int(points[ax][p]) for ax in range(len(grid))) for p in clash)
            return (f"pallas_call #{call_index}: grid programs {a} and {b} both write block "
                    f"{tuple(int(v) for v in row)} of output {out_index} (grid {grid}); on a GPU "
                    "grid programs run in parallel, so they race. Give every program its own "
                    "output block (loop over the reduction inside the kernel)")
    return ""


def parallel_write_conflict(closed: Any) -> str:
    """A message naming the first output block written by two grid programs, or ''."""
    from jaxbench.evaluator.sandbox.exporting import scan

    for i, eqn in enumerate(scan(closed).kernel_eqns):
        if eqn.primitive.name != "pallas_call":
            continue
        try:
            message = _conflict(eqn, i)
        except Exception:  # noqa: BLE001 - an unusual grid spec: the rule cannot say
            message = ""
        if message:
            return message
    return ""
