"""The GPU grid race rule, checked on the traced jaxpr (untrusted side: it can only add a failure).

On a GPU every grid program runs in parallel. An output location written by two
programs is a race: right in the sequential interpreter, wrong on the chip (the
TPU pattern of accumulating into one output block along an "arbitrary" grid
axis is exactly such a race under Triton). The rule decides **by value**:

- Blocked outputs: the output index map is evaluated for every grid point
  (vectorised with ``jax.vmap``, in chunks, so any grid up to ``MAX_STEPS`` points
  is decided in bounded memory); two programs whose blocks overlap break the rule.
  A cheap syntactic pass first names a grid axis the index map never reads.
- Whole-array outputs (the kernel indexes the output ref itself: ``ref[...] = ``,
  ``pl.store``, ``pl.ds``): the computation of every store's indices (and of the
  ``pl.when``/``cond`` predicates guarding it, and of static-length ``fori_loop``
  counters) is sliced out of the kernel body as a function of the program ids and
  evaluated the same way; two programs whose written elements overlap break the rule.
  Atomics are race-free and exempt.

Anything the rule cannot evaluate (a store index read from a ref or from scalar
prefetch, a store inside a loop of dynamic trip count, a dynamic grid, a grid of more
than ``MAX_STEPS`` points) is a failure ("cannot prove the GPU writes race-free"),
never a pass. Mosaic GPU's "sequential" grid axes run in order inside one thread block:
grid points that differ only along them are one program.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxbench.evaluator.judge.blocks import block_dims

# Grid points whose writes are evaluated; a larger grid is a failure ("too large to check").
MAX_STEPS = 1 << 26
# Grid points per vectorised evaluation (divided by the trip counts of loops around stores).
CHUNK = 1 << 16
# Output cells (elements, or aligned groups of elements) in the ownership table of one call.
MAX_CELLS = 1 << 25
# Cells marked per numpy batch.
BATCH_CELLS = 1 << 22
# Kept for callers of the old rule: the by-value check now covers any grid up to MAX_STEPS.
MAX_PROGRAMS = MAX_STEPS


class _Undecidable(Exception):
    """What decides a write's location cannot be evaluated: a failure, never a pass."""


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class _OutRef:
    index: int  # the output's position among the pallas_call's outputs


@dataclass(frozen=True)
class _Leaf:
    position: int  # an operand position of a write equation


@dataclass(frozen=True)
class _Write:
    """The static side of one store to an output: per dimension (kind, size, stride), kind
    "range" (``size`` elements from a start, ``stride`` apart), "point" or "array" (``size``
    index values); the starts, points and values come from the evaluation."""
    output: int
    dims: tuple[tuple[str, int, int], ...]
    where: str
    block: tuple[int, ...] | None = None  # block sizes of a blocked output, for messages


_ATOMICS = frozenset({"atomic_rmw", "atomic_cas"})


def _known(value: Any) -> bool:
    return not isinstance(value, (_Unknown, _OutRef))


def _where(eqn: Any) -> str:
    from jaxbench import compat

    frame = compat.user_frame(eqn)
    return f" (line {frame[0].rsplit('/', 1)[-1]}:{frame[1]})" if frame else ""


def _const(value: Any) -> Any:
    import jax.numpy as jnp

    try:
        return jnp.asarray(value)
    except Exception:  # noqa: BLE001 - not an array: nothing the rule can compute with
        return UNKNOWN


def _call_jaxpr(eqn: Any) -> tuple[Any, list[Any]] | None:
    from jaxbench import compat

    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        value = eqn.params.get(key)
        if isinstance(value, compat.ClosedJaxpr):
            return value.jaxpr, [_const(c) for c in value.consts]
        if isinstance(value, compat.Jaxpr):
            return value, []
    return None


def _writes_output(eqn: Any, ins: list[Any]) -> bool:
    """Whether ``eqn`` has a write effect on an operand that is a tracked output ref."""
    for effect in getattr(eqn, "effects", ()) or ():
        position = getattr(effect, "input_index", None)
        if type(effect).__name__ == "WriteEffect" and isinstance(position, int) \
                and position < len(ins) and isinstance(ins[position], _OutRef):
            return True
    return False


class _Slicer:
    """Evaluates, for one grid point (``jax.vmap`` batches it over many), what decides where
    a kernel body writes its whole-array outputs: the stores' indices as functions of the
    program ids and static values, and the predicates of the ``cond``s around them.
    ``records`` collects (static description, dynamic values) per store; values read from a
    ref, a scalar-prefetch operand or an unknown loop carry are UNKNOWN, and a store whose
    location needs one raises :class:`_Undecidable`."""

    def __init__(self, grid: tuple[int, ...], pids: tuple[Any, ...]) -> None:
        self.grid, self.pids = grid, pids
        self.records: list[tuple[_Write, tuple[Any, ...]]] = []

    def run(self, jaxpr: Any, consts: list[Any], args: list[Any], mask: Any) -> list[Any]:
        env: dict[Any, Any] = {}

        def read(var: Any) -> Any:
            return _const(var.val) if _is_literal(var) else env.get(var, UNKNOWN)

        env.update(zip(jaxpr.constvars, consts, strict=False))
        env.update(zip(jaxpr.invars, args, strict=False))
        for eqn in jaxpr.eqns:
            outs = self.eqn(eqn, [read(v) for v in eqn.invars], mask)
            env.update(zip(eqn.outvars, outs, strict=False))
        return [read(v) for v in jaxpr.outvars]

    def eqn(self, eqn: Any, ins: list[Any], mask: Any) -> list[Any]:
        import jax.numpy as jnp

        name, unknown = eqn.primitive.name, [UNKNOWN] * len(eqn.outvars)
        if name == "program_id":
            return [self.pids[int(eqn.params["axis"])]]
        if name == "num_programs":
            return [jnp.int32(self.grid[int(eqn.params["axis"])])]
        if name in _WRITES:
            if ins and isinstance(ins[0], _OutRef):
                self.record(eqn, ins, mask)
            return unknown
        if name in _ATOMICS:
            return unknown
        if name == "cond":
            return self.cond(eqn, ins, mask)
        if name == "scan":
            return self.scan(eqn, ins, mask)
        if name == "while":
            return self.while_loop(eqn, ins, mask)
        if name == "run_scoped":
            jaxpr = eqn.params["jaxpr"]
            if len(jaxpr.constvars) == len(ins):
                return self.run(jaxpr, ins, [UNKNOWN] * len(jaxpr.invars), mask)[:len(unknown)]
        call = _call_jaxpr(eqn)
        if call is not None and len(call[0].invars) == len(ins):
            return self.run(call[0], call[1], ins, mask)[:len(unknown)]
        if _writes_output(eqn, ins) or (call is not None
                                         and any(isinstance(x, _OutRef) for x in ins)):
            raise _Undecidable(f"{name} writes output {_first_output(ins)}{_where(eqn)} in a way "
                               "the rule cannot follow")
        if call is None and not eqn.effects and all(_known(x) for x in ins):
            try:
                out = eqn.primitive.bind(*ins, **eqn.params)
            except Exception:  # noqa: BLE001 - cannot be evaluated here: unknown
                return unknown
            return list(out) if eqn.primitive.multiple_results else [out]
        return unknown

    def cond(self, eqn: Any, ins: list[Any], mask: Any) -> list[Any]:
        import jax.numpy as jnp
        from jax import lax

        branches, (index, *args) = eqn.params["branches"], ins
        if not _known(index):  # every branch may run: its stores all count
            for branch in branches:
                self.run(branch.jaxpr, [_const(c) for c in branch.consts], args, mask)
            return [UNKNOWN] * len(eqn.outvars)
        index = jnp.clip(index.astype(jnp.int32), 0, len(branches) - 1)
        results = [self.run(b.jaxpr, [_const(c) for c in b.consts], args, mask & (index == i))
                   for i, b in enumerate(branches)]
        outs = []
        for values in zip(*results, strict=True):
            try:
                outs.append(lax.select_n(index, *values) if all(map(_known, values))
                            else UNKNOWN)
            except Exception:  # noqa: BLE001 - e.g. mixed weak types: unknown
                outs.append(UNKNOWN)
        return outs

    def scan(self, eqn: Any, ins: list[Any], mask: Any) -> list[Any]:
        """A static-length loop (``fori_loop`` with static bounds): evaluated for every trip,
        its stores get one more leading axis (the trip)."""
        from jax import lax

        params, body = eqn.params, eqn.params["jaxpr"]
        nc, nk = params["num_consts"], params["num_carry"]
        consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
        body_consts = [_const(c) for c in body.consts]
        dtypes = [v.aval.dtype for v in body.jaxpr.invars[nc:nc + nk]]
        known = [_known(x) for x in init]
        saved = self.records
        try:  # the carries that stay known through a trip (the dry runs' work is dropped by jit)
            while True:
                self.records = []
                probe = [x if k else UNKNOWN for x, k in zip(init, known, strict=True)]
                outs = self.run(body.jaxpr, body_consts,
                                [*consts, *probe,
                                 *(x[0] if _known(x) else UNKNOWN for x in xs)], mask)
                again = [k and _known(o) for k, o in zip(known, outs[:nk], strict=True)]
                if again == known:
                    break
                known = again
        finally:
            self.records = saved
        inner: list[_Write] = []

        def trip(carry: Any, x: Any) -> Any:
            carry_it, x_it = iter(carry), iter(x)
            args = [*consts, *(next(carry_it) if k else UNKNOWN for k in known),
                    *(next(x_it) if _known(v) else UNKNOWN for v in xs)]
            outer, self.records = self.records, []
            try:
                outs = self.run(body.jaxpr, body_consts, args, mask)
                found = self.records
            finally:
                self.records = outer
            inner[:] = [w for w, _ in found]
            return ([lax.convert_element_type(o, d)
                     for o, k, d in zip(outs[:nk], known, dtypes, strict=True) if k],
                    tuple(values for _, values in found))

        start = [lax.convert_element_type(x, d)
                 for x, k, d in zip(init, known, dtypes, strict=True) if k]
        carry, ys = lax.scan(trip, start, [x for x in xs if _known(x)], length=params["length"],
                             reverse=params["reverse"])
        self.records.extend(zip(inner, ys, strict=True))
        carry_it = iter(carry)
        return [next(carry_it) if k else UNKNOWN for k in known] + \
            [UNKNOWN] * (len(eqn.outvars) - nk)

    def while_loop(self, eqn: Any, ins: list[Any], mask: Any) -> list[Any]:
        """A loop of dynamic trip count: its stores count (as if it ran) only when their
        locations do not depend on the loop's carries."""
        params = eqn.params
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        body = params["body_jaxpr"]
        carry = [UNKNOWN] * (len(ins) - nc - nb)
        try:
            self.run(body.jaxpr, [_const(c) for c in body.consts],
                     [*ins[nc:nc + nb], *carry], mask)
        except _Undecidable as exc:
            raise _Undecidable(f"{exc}, inside a while loop of dynamic trip count (make the "
                               "trip count static)") from None
        return [UNKNOWN] * len(eqn.outvars)

    def record(self, eqn: Any, ins: list[Any], mask: Any) -> None:
        import jax.numpy as jnp

        output, where = ins[0].index, _where(eqn)
        if eqn.primitive.name == "masked_swap":
            _, transforms, _, _ = eqn.params["args_tree"].unflatten(
                [_Leaf(i) for i in range(len(ins))])
        else:  # state swap / addupdate: ref, value, indexers
            transforms = eqn.params["tree"].unflatten([_Leaf(i) for i in range(2, len(ins))])

        def value(x: Any) -> Any:
            if isinstance(x, _Leaf):
                x = ins[x.position]
                if not _known(x):
                    raise _Undecidable(
                        f"the location of a store to output {output}{where} depends on a value "
                        "the rule cannot evaluate (data read from a ref, scalar prefetch, or a "
                        "loop carry)")
                return x.astype(jnp.int32)
            return jnp.int32(int(x))

        shape = eqn.invars[0].aval.shape
        dims: list[list[Any]] = [["range", jnp.int32(0), int(n), 1] for n in shape]
        arrays = False
        for transform in transforms or ():
            free = [i for i, d in enumerate(dims) if d[0] == "range"]
            indices = getattr(transform, "indices", None)
            if type(transform).__name__ != "NDIndexer" or arrays or len(indices) != len(free):
                raise _Undecidable(f"a store to output {output}{where} goes through a "
                                   f"{type(transform).__name__} view the rule cannot follow")
            for axis, idx in zip(free, indices, strict=True):
                _, start, _, stride = dims[axis]
                if type(idx).__name__ == "Slice":
                    if isinstance(idx.size, _Leaf) or isinstance(idx.stride, _Leaf):
                        raise _Undecidable(f"a store to output {output}{where} has a slice of "
                                           "dynamic size")
                    dims[axis] = ["range", start + value(idx.start) * stride, int(idx.size),
                                  stride * int(idx.stride)]
                else:
                    at = start + value(idx) * stride
                    arrays |= bool(at.ndim)
                    dims[axis] = ["array", at, int(at.size), 1] if at.ndim else \
                        ["point", at, 1, 1]
        static = _Write(output, tuple((k, n, s) for k, _, n, s in dims), where)
        self.records.append((static, (jnp.asarray(mask), *(d[1] for d in dims))))


def _first_output(ins: list[Any]) -> int:
    return next(x.index for x in ins if isinstance(x, _OutRef))


def _block_record(slicer: _Slicer, block: Any, output: int) -> tuple[_Write, tuple[Any, ...]]:
    """The output block a grid point writes, from the output's index map."""
    import jax.numpy as jnp

    closed = block.index_map_jaxpr
    args = [*slicer.pids, *[UNKNOWN] * (len(closed.jaxpr.invars) - len(slicer.pids))]
    index = slicer.run(closed.jaxpr, [_const(c) for c in closed.consts], args, jnp.bool_(True))
    dims, starts, sizes = [], [], []
    for dim, at in zip(block.block_shape, index, strict=True):
        if not _known(at):
            raise _Undecidable(f"output {output}'s index map reads a value the rule cannot "
                               "evaluate (scalar prefetch)")
        at, kind = at.astype(jnp.int32), type(dim).__name__
        if isinstance(dim, (int, np.integer)) or kind == "Blocked":
            size = int(getattr(dim, "block_size", dim))
            start = at * size
        elif dim is None or kind == "Squeezed":
            size, start = 1, at
        elif kind == "Element":
            size, start = int(dim.block_size), at - int(dim.padding[0])
        else:
            raise _Undecidable(f"output {output} has a {kind} block dimension")
        dims.append(("range", size, 1))
        starts.append(start)
        sizes.append(size)
    return _Write(output, tuple(dims), "", tuple(sizes)), (jnp.bool_(True), *starts)


def _atomic_only(body: Any, ref: Any) -> bool:
    """Whether every write to ``ref`` in ``body`` (and the jaxprs inside it) is atomic."""
    kinds: set[str] = set()

    def walk(jaxpr: Any, refs: set[Any]) -> None:
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            if eqn.invars and not _is_literal(eqn.invars[0]) and eqn.invars[0] in refs \
                    and (name in _WRITES or name in _ATOMICS):
                kinds.add("atomic" if name in _ATOMICS else "plain")
            subs = _sub_bindings(eqn)
            if name == "run_scoped":
                inner = eqn.params["jaxpr"]
                subs = [(inner, list(eqn.invars))] if not inner.constvars else []
                walk(inner, {v for v, o in zip(inner.constvars, eqn.invars, strict=False)
                             if not _is_literal(o) and o in refs})
            for sub, bound in subs:
                walk(sub, {inner for inner, outer in zip(sub.invars, bound, strict=False)
                           if not _is_literal(outer) and outer in refs})

    walk(body, {ref})
    return kinds == {"atomic"}


def _program_of(steps: np.ndarray, grid: tuple[int, ...], sequential: frozenset[int]) -> Any:
    """The program of each grid point: grid points that differ only along sequential axes
    are one program."""
    coords = np.unravel_index(steps, grid)
    return np.ravel_multi_index([np.zeros_like(c) if axis in sequential else c
                                 for axis, c in enumerate(coords)], grid)


def _syntactic(grid: tuple[int, ...], outputs: list[tuple[int, Any]], call_index: int) -> str:
    """Cheap and size-independent: a parallel grid axis an output's index map never reads."""
    for out_index, block in outputs:
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
    return ""


def _conflict(eqn: Any, call_index: int) -> str:
    import jax
    import jax.numpy as jnp

    from jaxbench import compat

    mapping = eqn.params["grid_mapping"]
    try:
        grid = tuple(int(g) for g in mapping.grid)
    except TypeError:
        raise _Undecidable("its grid has dynamic bounds") from None
    # Mosaic GPU runs "sequential" axes in order inside one thread block: not parallel programs.
    sequential = compat.sequential_grid_axes(eqn)
    parallel = tuple(1 if axis in sequential else n for axis, n in enumerate(grid))
    if math.prod(parallel) <= 1:
        return ""
    first = mapping.num_inputs
    outputs = mapping.block_mappings[first: first + mapping.num_outputs]
    whole = {i for i, b in enumerate(outputs) if block_dims(b) == tuple(b.array_aval.shape)}
    body = eqn.params["jaxpr"]
    first_ref = mapping.num_index_operands + mapping.num_inputs
    refs = body.invars[first_ref: first_ref + mapping.num_outputs]
    blocked = [i for i in range(len(outputs))
               if i not in whole and not _atomic_only(body, refs[i])]
    problem = _syntactic(parallel, [(i, outputs[i]) for i in blocked], call_index)
    if problem:
        return problem

    statics: list[_Write] = []

    def writes(*pids: Any) -> tuple[Any, ...]:
        slicer = _Slicer(grid, pids)
        slicer.records.extend(_block_record(slicer, outputs[i], i) for i in blocked)
        if whole:
            args: list[Any] = [UNKNOWN] * len(body.invars)
            for i in whole:
                args[first_ref + i] = _OutRef(i)
            slicer.run(body, [], args, jnp.bool_(True))
        statics[:] = [w for w, _ in slicer.records]
        return tuple(values for _, values in slicer.records)

    batched = jax.vmap(writes)
    shapes = jax.eval_shape(batched, *[jax.ShapeDtypeStruct((1,), jnp.int32)] * len(grid))
    if not statics:
        return ""
    per_step = sum(math.prod(values[0].shape[1:]) for values in shapes)
    steps = math.prod(grid)
    if steps > MAX_STEPS or steps * per_step > MAX_STEPS * 4:
        raise _Undecidable(f"grid {grid} has {steps:,} programs ({steps * per_step:,} stores "
                           f"to evaluate), more than the rule evaluates ({MAX_STEPS:,} programs):"
                           " grid too large to check")
    chunk = max(1, min(steps, CHUNK // max(per_step, 1)))
    evaluate = jax.jit(batched)

    def chunks() -> Any:
        for lo in range(0, steps, chunk):
            ids = np.arange(lo, lo + chunk)
            ids = np.minimum(ids, steps - 1)  # the last chunk repeats the last grid point
            pids = np.unravel_index(ids, grid)
            yield ids, [np.asarray(v) for v in
                        jax.tree_util.tree_leaves(evaluate(*(p.astype(np.int32) for p in pids)))]

    shapes_out = [tuple(b.array_aval.shape) for b in outputs]
    return _decide(statics, chunks, shapes_out, grid, sequential, call_index)


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


def _decide(statics: list[_Write], chunks: Any, shapes: list[tuple[int, ...]],
            grid: tuple[int, ...], sequential: frozenset[int], call_index: int) -> str:
    """Two passes over every grid point's stores: the coarsest cells each output can be split
    into (per dimension the gcd of every start, point and size, so a store covers whole cells
    or cell corners), then an owner table of cells (the grid point that wrote each first)."""
    def split(leaves: list[np.ndarray]) -> list[tuple[_Write, np.ndarray, list[np.ndarray]]]:
        out, at = [], 0
        for write in statics:
            mask = leaves[at].astype(bool)
            values = [np.asarray(v, np.int64) for v in leaves[at + 1: at + 1 + len(write.dims)]]
            out.append((write, mask, values))
            at += 1 + len(write.dims)
        return out

    def expand(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
        return mask.reshape(mask.shape + (1,) * (values.ndim - mask.ndim))

    gcds = {(w.output, d): 0 for w in statics for d in range(len(w.dims))}
    for w in statics:
        for d, (kind, size, stride) in enumerate(w.dims):
            if kind == "range":
                gcds[w.output, d] = math.gcd(gcds[w.output, d], size if stride == 1 else stride)
    for _, leaves in chunks():
        for w, mask, values in split(leaves):
            for d, v in enumerate(values):
                chosen = v[np.broadcast_to(expand(mask, v), v.shape)]
                if chosen.size:
                    gcds[w.output, d] = math.gcd(gcds[w.output, d],
                                                 int(np.gcd.reduce(np.abs(chosen))))
    cells: dict[int, tuple[int, ...]] = {}
    for out in {w.output for w in statics}:
        shape = shapes[out]
        sizes = tuple(max(gcds.get((out, d), 1), 1) for d in range(len(shape)))
        cells[out] = tuple(-(-n // g) for n, g in zip(shape, sizes, strict=True))
        gcds.update({(out, d): g for d, g in enumerate(sizes)})
    if sum(math.prod(c) for c in cells.values()) > MAX_CELLS:
        raise _Undecidable(f"its outputs split into more than {MAX_CELLS:,} separately written "
                           "cells: too large to check")
    owners = {out: np.full(math.prod(c), -1, np.int64) for out, c in cells.items()}

    def clash(w: _Write, cell: int, a: int, b: int) -> str:
        shape, grain = shapes[w.output], [gcds[w.output, d] for d in range(len(w.dims))]
        corner = np.unravel_index(cell, cells[w.output])
        spans = [(int(c) * g, min(int(c) * g + g, n)) for c, g, n in
                 zip(corner, grain, shape, strict=True)]
        where = "[" + ", ".join(f"{lo}" if hi - lo == 1 else f"{lo}:{hi}"
                                for lo, hi in spans) + "]"
        pa, pb = (tuple(int(c) for c in np.unravel_index(s, grid)) for s in sorted((a, b)))
        if w.block is not None:
            block = tuple(lo // size for (lo, _), size in zip(spans, w.block, strict=True))
            return (f"pallas_call #{call_index}: grid programs {pa} and {pb} both write block "
                    f"{block} of output {w.output} (elements {where}; grid {grid}); on a GPU "
                    "grid programs run in parallel, so they race. Give every program its own "
                    "output block (loop over the reduction inside the kernel)")
        return (f"pallas_call #{call_index}: grid programs {pa} and {pb} both write elements "
                f"{where} of output {w.output} (a whole-array output the kernel indexes itself; "
                f"store{w.where}; grid {grid}); on a GPU grid programs run in parallel, so they "
                "race. Give each program its own output elements (loop over the reduction "
                "inside the kernel), or use atomics")

    for ids, leaves in chunks():
        for w, mask, values in split(leaves):
            out, ncells = w.output, cells[w.output]
            steps = np.broadcast_to(ids.reshape((-1,) + (1,) * (mask.ndim - 1)), mask.shape)
            live = np.nonzero(mask.reshape(-1))[0]
            if not live.size:
                continue
            per_dim = []
            for d, ((kind, size, stride), v) in enumerate(zip(w.dims, values, strict=True)):
                grain = gcds[out, d]
                base = v.reshape(mask.size, -1)[live] // grain
                if kind == "range":
                    offsets = np.arange(size // grain) if stride == 1 else \
                        np.arange(size) * (stride // grain)
                    base = base + offsets[None, :]
                per_dim.append(base)
            per_write = math.prod(c.shape[1] for c in per_dim)
            if per_write > BATCH_CELLS:
                raise _Undecidable(f"a store to output {out}{w.where} covers {per_write:,} "
                                   "separately written cells: too large to check")
            batch = max(1, BATCH_CELLS // per_write)
            writers = steps.reshape(-1)[live]
            for lo in range(0, live.size, batch):
                part = slice(lo, lo + batch)
                n = len(writers[part])
                key = np.zeros((n,) + (1,) * len(per_dim), np.int64)
                valid = np.ones_like(key, bool)
                for d, c in enumerate(per_dim):
                    c = c[part].reshape((n,) + tuple(-1 if e == d else 1
                                                     for e in range(len(per_dim))))
                    valid = valid & (c >= 0) & (c < ncells[d])
                    key = key * ncells[d] + c
                key, valid = np.broadcast_arrays(key, valid)
                who = np.broadcast_to(writers[part].reshape((n,) + (1,) * len(per_dim)),
                                      key.shape)
                key, who = key[valid], who[valid]
                program = _program_of(who, grid, sequential)
                order = np.lexsort((program, key))
                key, who, program = key[order], who[order], program[order]
                same = np.nonzero((key[1:] == key[:-1]) & (program[1:] != program[:-1]))[0]
                if same.size:
                    i = int(same[0])
                    return clash(w, int(key[i]), int(who[i]), int(who[i + 1]))
                before = owners[out][key]
                taken = before >= 0
                if taken.any():
                    other = np.nonzero(taken)[0]
                    differ = _program_of(before[other], grid, sequential) != program[other]
                    if differ.any():
                        i = int(other[np.argmax(differ)])
                        return clash(w, int(key[i]), int(before[i]), int(who[i]))
                owners[out][key] = who
    return ""


def parallel_write_conflict(closed: Any) -> str:
    """A message naming the first output location written by two grid programs, or the reason
    the rule cannot prove there is none; '' when every write is proved race-free."""
    from jaxbench.evaluator.judge.exporting import scan

    for i, eqn in enumerate(scan(closed).kernel_eqns):
        if eqn.primitive.name != "pallas_call":
            continue
        try:
            message = _conflict(eqn, i)
        except _Undecidable as exc:
            message = f"pallas_call #{i}: cannot prove the GPU writes race-free: {exc}"
        except Exception as exc:  # noqa: BLE001 - a grid spec the rule does not know: no pass
            message = (f"pallas_call #{i}: cannot prove the GPU writes race-free: the rule "
                       f"cannot evaluate this grid spec ({type(exc).__name__}: "
                       f"{str(exc)[:200]})")
        if message:
            return message
    return ""
