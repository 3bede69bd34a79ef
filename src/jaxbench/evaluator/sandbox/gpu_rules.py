"""The GPU grid race rule, checked on the traced jaxpr (untrusted side: it can only add a failure).

On a GPU every grid program runs in parallel. An output block written by two
programs is a race: right in the sequential interpreter, wrong on the chip (the
TPU pattern of accumulating into one output block along an "arbitrary" grid
axis is exactly such a race under Triton). For every ``pallas_call`` with a
blocked output, the output index map is evaluated for every grid point; two
grid points that map to the same block break the rule. Outputs whose block is
the whole array (kernels that index the output themselves) cannot be checked
this way by the index map; for them, every write to the output inside the kernel body is
followed back to ``pl.program_id``: a write whose location does not depend on some grid
axis with more than one program is made by several programs at once (atomics excepted).
Mosaic GPU's "sequential" grid axes run in order inside one thread block and are exempt.
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
    # Mosaic GPU runs "sequential" axes in order inside one thread block: not parallel programs.
    sequential = compat.sequential_grid_axes(eqn)
    grid = tuple(1 if axis in sequential else n for axis, n in enumerate(grid))
    programs = math.prod(grid)
    if programs <= 1:
        return ""
    outputs = mapping.block_mappings[mapping.num_inputs: mapping.num_inputs + mapping.num_outputs]
    for out_index, block in enumerate(outputs):
        if _block_dims(block) == tuple(block.array_aval.shape):
            continue
        # Cheap and size-independent: a grid axis the output's index map ignores.
        index_map = block.index_map_jaxpr.jaxpr
        deps = {var: frozenset({axis}) for axis, var in enumerate(index_map.invars[:len(grid)])}
        _location_axes(index_map, deps, {}, [])
        used = frozenset().union(*(deps.get(v, frozenset()) for v in index_map.outvars
                                   if not _is_literal(v)))
        ignored = [axis for axis, n in enumerate(grid) if n > 1 and axis not in used]
        if ignored:
            axis = ignored[0]
            return (f"pallas_call #{call_index}: output {out_index}'s block does not depend on grid "
                    f"axis {axis} (grid {grid}): its {grid[axis]} programs along that axis write "
                    "the same block; on a GPU grid programs run in parallel, so they race. Give "
                    "every program its own output block (loop over the reduction inside the "
                    "kernel)")
    if programs > MAX_PROGRAMS:
        return ""
    points = np.indices(grid).reshape(len(grid), -1).astype(np.int32)
    outputs = mapping.block_mappings[mapping.num_inputs: mapping.num_inputs + mapping.num_outputs]
    whole = [i for i, b in enumerate(outputs) if _block_dims(b) == tuple(b.array_aval.shape)]
    if whole:
        problem = _whole_output_writes(eqn, mapping, grid, whole, call_index)
        if problem:
            return problem
    for out_index, block in enumerate(outputs):
        if out_index in whole:
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


# Writes to a ref (``ref[...] = v``, ``ref[...] += v``, masked stores); atomics are race-free.
_WRITES = frozenset({"swap", "masked_swap", "addupdate", "store"})


def _sub_bindings(eqn: Any) -> list[tuple[Any, list[Any]]]:
    """(sub-jaxpr, the eqn operands bound to its inputs, positionally) for control flow."""
    from jaxbench import compat

    params, name = eqn.params, eqn.primitive.name
    args = list(eqn.invars)
    jaxpr = lambda v: v.jaxpr if isinstance(v, compat.ClosedJaxpr) else v  # noqa: E731
    if name == "cond":
        return [(jaxpr(b), args[1:]) for b in params["branches"]]
    if name == "while":
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        carry = args[nc + nb:]
        return [(jaxpr(params["cond_jaxpr"]), args[:nc] + carry),
                (jaxpr(params["body_jaxpr"]), args[nc:nc + nb] + carry)]
    found = []
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        value = params.get(key)
        if isinstance(value, (compat.ClosedJaxpr, compat.Jaxpr)):
            sub = jaxpr(value)
            if len(sub.invars) == len(args):
                found.append((sub, args))
    return found


def _location_axes(jaxpr: Any, deps: dict[Any, frozenset[int]], outputs: dict[Any, int],
                   writes: list[tuple[int, frozenset[int]]]) -> None:
    """Propagates grid-axis dependencies through ``jaxpr`` and records, for every write to an
    output ref, the grid axes its location depends on."""
    for _ in range(2):  # a second pass lets loop-carried values pick up their dependencies
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            operands = [deps.get(v, frozenset()) if not _is_literal(v) else frozenset()
                        for v in eqn.invars]
            if name == "program_id":
                out = frozenset({int(eqn.params["axis"])})
            else:
                out = frozenset().union(*operands) if operands else frozenset()
            for var in eqn.outvars:
                deps[var] = deps.get(var, frozenset()) | out
            if name in _WRITES and eqn.invars and eqn.invars[0] in outputs:
                where = frozenset().union(*operands[2:]) if len(operands) > 2 else frozenset()
                writes.append((outputs[eqn.invars[0]], where))
            for sub, bound in _sub_bindings(eqn):
                for inner, outer in zip(sub.invars, bound, strict=False):
                    if not _is_literal(outer):
                        deps[inner] = deps.get(inner, frozenset()) | deps.get(outer, frozenset())
                        if outer in outputs:
                            outputs[inner] = outputs[outer]
                _location_axes(sub, deps, outputs, writes)
                for inner_out, outer_out in zip(sub.outvars, eqn.outvars, strict=False):
                    if not _is_literal(inner_out):
                        deps[outer_out] = deps.get(outer_out, frozenset()) | \
                            deps.get(inner_out, frozenset())


def _is_literal(var: Any) -> bool:
    return type(var).__name__ == "Literal"


def _whole_output_writes(eqn: Any, mapping: Any, grid: tuple[int, ...], whole: list[int],
                         call_index: int) -> str:
    body = eqn.params["jaxpr"]
    first_output = mapping.num_index_operands + mapping.num_inputs
    refs = body.invars[first_output: first_output + mapping.num_outputs]
    outputs = {ref: i for i, ref in enumerate(refs) if i in whole}
    writes: list[tuple[int, frozenset[int]]] = []
    _location_axes(body, {}, outputs, writes)
    parallel = {axis for axis, n in enumerate(grid) if n > 1}
    for out_index, axes in writes:
        missing = sorted(parallel - axes)
        if missing:
            return (f"pallas_call #{call_index}: output {out_index} is one whole-array block, and "
                    f"a write to it does not depend on grid axis {missing[0]} (of grid {grid}): "
                    f"the {grid[missing[0]]} programs along that axis write the same elements "
                    "in parallel on a GPU. Give each program its own output block (loop over "
                    "the reduction inside the kernel), or use atomics")
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
