"""The work the kernels surely do, counted on the jaxpr the judge lowers (trusted side).

The outside-work rule compares what runs in XLA with the module's own total, so it needs the
other half: the work inside the Pallas kernels. The target module cannot say (a kernel is an
opaque custom call there); the jaxpr can. Kernel work is a **lower bound**: what surely runs
and surely reaches the result, so that work a kernel only pretends to do never pads the total.
For every kernel equation (``pallas_call``, ``core_map``, ``mpmd_map``) this module counts

- **FLOPs**: per program of its grid (or mesh), the kernel body's equations whose results reach
  a write to an output the module uses (work dropped, multiplied by a constant zero, or only
  written to an output nobody reads is not counted), times the trip counts of the loops around
  the kernel call. In the body, ``dot_general`` is ``2 * out * K``, a convolution
  ``2 * out * window``, a reduction one per element it reads, data movement (loads, stores,
  reshapes, casts, slices, DMAs, ids) nothing, and any other primitive one per element it makes.
- **branches and loops**: a ``cond`` whose index the judge can evaluate (constants, program
  ids, the grid's size (both of the user's grid: a vmapped kernel's batch dimensions aside)
  and integer arithmetic on them, and reads of a scalar-prefetch table the traced function
  computes from its constants alone: :class:`Values`) counts the branch each program takes;
  otherwise the cheapest branch. An index that evaluates outside the branches (``cond_p``
  bound directly, past ``lax.switch``'s clamp) raises :class:`BranchOutOfRange`: JAX's
  lowerings disagree on the branch it runs. A ``scan`` counts its length; a ``while`` counts
  the trips of a proven counted loop (``fori_loop``'s form, bounds the judge can evaluate, per
  program) and otherwise none. Outside kernels the same holds for kernel calls
  inside branches and loops.
- **bytes**: of the operands the kernel body surely reads and the outputs it surely writes
  that reach the module's result, the blocks that move: the distinct blocks its index maps
  place (each crosses HBM at least once), or a block per program where the judge cannot
  evaluate the map, never more than the operand; for operands in ``ANY`` memory, the bytes of
  the kernel's own DMAs that surely run (``dma_start``'s source), at most those operands.
- **the trial's data**: given the first trial's inputs (``known``), grids sized from them,
  scalar-prefetch tables, and each program's block of a blocked integer operand (through its
  index map: the per-program lengths and offsets kernels bound their loops by; a splat in SMEM
  as that number everywhere) are known values; a block that reads past the operand's edge
  (padding, undefined) is not. What the traced program computes from floats decides only with
  ``floats`` (where this host runs the trial: interpret mode).
- **wrappers**: calls (``jit``, ``checkpoint``, ``custom_jvp``/``custom_vjp``, ``closed_call``)
  run their jaxpr once; ``shard_map`` and ``pmap`` once per device of their mesh; ``vmap`` of a
  kernel is a kernel with a larger grid. A kernel inside any other higher-order primitive
  (:data:`READ_HIGHER_ORDER` lists those read) raises :class:`Unreadable`: `unverified`, never
  a count of nothing.
- **programs**: a grid with a dimension of 0 runs no program, and one with a dimension the
  judge cannot evaluate (a dynamic size from data) counts none: it does nothing.

A kernel call counts only where one of its results reaches an output of the traced function
through values (:func:`_relevance`): a kernel whose result nothing uses, or that is only
multiplied by a constant zero or selected away by a constant predicate, does nothing. The
data-flow rule (:func:`outputs_without_kernel`) follows values the same way; a kernel output
aliased to an input that the kernel does not surely write in full is that input, passed
through (:func:`_unwritten_aliases`).

It also prices the equations *outside* kernels in the same units (``outside_eqns``) so that a
refusal can name the line of the kernel file that put the most work in XLA. The verdict's
outside figures themselves come from the lowered module (:mod:`.structure`).

Anything this module cannot read raises; the runner makes that `unverified` (never a skipped
rule). Never imports the sandbox.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from jaxbench import compat

__all__ = ["BranchOutOfRange", "KernelWork", "Unreadable", "Values", "count",
           "outputs_without_kernel"]

# Primitives that only move, name or order data: free inside a kernel and out.
MOVEMENT = frozenset("""
get swap load store masked_load masked_swap addupdate_p program_id num_programs
broadcast_in_dim reshape squeeze expand_dims convert_element_type bitcast_convert_type iota slice
dynamic_slice dynamic_update_slice concatenate transpose pad rev copy copy_p device_put
multiple_of max_contiguous dma_start dma_wait semaphore_signal semaphore_wait semaphore_read
barrier_arrive barrier_wait wait_smem_to_gmem copy_smem copy_gmem_to_smem copy_smem_to_gmem
commit_smem commit_group async_copy wait_load wait_store axis_index sharding_constraint
optimization_barrier pvary split gather select_and_gather_add_p debug_callback debug_print
run_state ref_reshape ref_bitcast get_barrier_semaphore delay prng_seed prng_random_bits
random_wrap random_unwrap random_seed random_bits stop_gradient name
""".split())
# One operation per element of the (first) operand.
REDUCTIONS = frozenset("""
reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or reduce_xor argmax argmin
cumsum cumprod cummax cummin cumlogsumexp reduce_precision_sum sort
""".split())

# Indexed reads and writes: free movement inside a kernel, a priced lookup outside one (named
# at two FLOPs an element, as :mod:`.pricing` prices them on the module).
_LOOKUPS = frozenset({"gather", "dynamic_slice", "dynamic_update_slice", "scatter", "scatter-add",
                      "scatter_add"})

# Primitives whose one sub-jaxpr (this parameter) runs once, in line, on the equation's operands.
# ``shard_map`` and ``xla_pmap`` run theirs once per device of their mesh (:func:`_per_device`).
_CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "call": "call_jaxpr", "closed_call": "call_jaxpr",
          "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "remat": "jaxpr", "remat2": "jaxpr",
          "checkpoint": "jaxpr", "run_scoped": "jaxpr", "custom_vmap_call": "call",
          "eval_jaxpr": "call_jaxpr", "xla_metadata_call": "jaxpr",  # (JAX 0.12)
          "shard_map": "jaxpr", "xla_pmap": "call_jaxpr"}
# The primitives nesting jaxprs that the counter reads besides the calls above; any other one
# that holds a kernel makes the count unreadable (`unverified`), never a count of nothing.
READ_HIGHER_ORDER = frozenset({"cond", "scan", "while", *_CALLS})
# Above this many programs a kernel is counted for one representative program (whose ids are
# unknown) times the grid: branches on program ids then count their cheapest side.
MAX_PROGRAMS = 1 << 16
MAX_DEPTH = 24  # the shipped seeds nest at most 7 deep
# Reads: an equation with only these effects is no sink (its value must reach one).
_READS = frozenset({"get", "load", "masked_load"})


class Unreadable(ValueError):
    """The jaxpr holds what the counter cannot read (nested too deeply, say): the judge cannot
    bound the kernels' work, and says so (`unverified`), never guessing."""


class BranchOutOfRange(Unreadable):
    """A ``cond`` whose index the judge evaluates to a value outside ``[0, branches)`` (bound on
    ``cond_p`` directly, past ``lax.switch``'s clamp): XLA's ``case`` runs the last branch,
    Pallas' TPU interpreter the first, Mosaic and Triton their own; which one the kernel runs
    depends on where it runs, so the judge does not guess (`unverified`)."""

    def __init__(self, index: int, branches: int) -> None:
        super().__init__(f"a cond's branch index evaluates to {index} with {branches} branches: "
                         "JAX's lowerings disagree on which branch runs (XLA's case runs the "
                         "last, Pallas' TPU interpreter the first), so the judge cannot tell "
                         "what the kernel does")


def _check_index(index: Any, n: int, mask: Any = None) -> None:
    """Raises :class:`BranchOutOfRange` where a known branch index (of the programs in
    ``mask``, per program) is outside ``[0, n)``."""
    values = _wide(np.asarray(index))
    if mask is not None:
        values = np.broadcast_to(values, mask.shape)[mask]
    bad = values[(values < 0) | (values >= n)]
    if bad.size:
        raise BranchOutOfRange(int(bad.flat[0]), n)


class KernelCall(TypedDict):
    """One kernel equation's work (all its calls): FLOPs and bytes it surely does, its
    programs, and the kernel file's ``(file, line)`` that made it (None when unknown)."""

    flops: float
    bytes: float
    programs: int
    line: tuple[str, int] | None


@dataclass
class KernelWork:
    """The kernels' work at one size, and the heaviest equations outside them."""

    flops: float = 0.0
    bytes: float = 0.0
    kernels: list[KernelCall] = field(default_factory=list)  # one per kernel equation
    # (flops, primitive name, (file, line) or None) of each equation outside kernels
    outside_eqns: list[tuple[float, str, Any]] = field(default_factory=list)
    # (output index, what made it, (file, line) or None) of each output no kernel reaches
    unreached: list[tuple[int, str, Any]] = field(default_factory=list)
    # a kernel had an integer operand the count did not know (a grid bound, a table, lengths):
    # counted on a trial's data, it may count more
    wants_data: bool = False


# -- sizes and prices ----------------------------------------------------------------------------
def _size(aval: Any) -> int:
    shape = getattr(aval, "shape", ())
    try:
        return math.prod(int(d) for d in shape)
    except TypeError:  # a dynamic dimension: counted as one
        return 1


def _nbytes(aval: Any) -> int:
    dtype = getattr(aval, "dtype", None)
    itemsize = getattr(dtype, "itemsize", 0) or 0
    return _size(aval) * int(itemsize)


def _outputs(eqn: Any) -> int:
    return sum(_size(v.aval) for v in eqn.outvars)


def _dot(eqn: Any) -> float:
    (lhs_contracting, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    k = math.prod(int(lhs[d]) for d in lhs_contracting)
    return 2.0 * _outputs(eqn) * k


def _conv(eqn: Any) -> float:
    rhs = eqn.invars[1].aval
    numbers = eqn.params.get("dimension_numbers")
    out_dim = getattr(numbers, "rhs_spec", (0,))[0]
    features = int(rhs.shape[out_dim]) or 1
    return 2.0 * _outputs(eqn) * (_size(rhs) / features)


def leaf_flops(eqn: Any) -> float:
    """The FLOPs of one equation without sub-jaxprs."""
    name = eqn.primitive.name
    if name == "dot_general":
        return _dot(eqn)
    if name == "conv_general_dilated":
        return _conv(eqn)
    if name in REDUCTIONS:
        return float(_size(eqn.invars[0].aval)) if eqn.invars else 0.0
    if name in MOVEMENT:
        return 0.0
    return float(_outputs(eqn))


def _jaxpr(value: Any) -> Any:
    return getattr(value, "jaxpr", value)


def _subs(eqn: Any) -> list[Any]:
    return list(compat.sub_jaxprs(eqn.params))


def _is_literal(v: Any) -> bool:
    from jax.extend.core import Literal

    return isinstance(v, Literal)


def _dropped(v: Any) -> bool:
    return type(v).__name__ == "DropVar"


def _call_jaxpr(eqn: Any) -> Any:
    """The jaxpr a call-like equation runs once on its operands, or None."""
    name = _CALLS.get(eqn.primitive.name)
    sub = eqn.params.get(name) if name else None
    if sub is None:
        return None
    sub = _jaxpr(sub)
    if eqn.primitive.name == "run_scoped":  # the refs it closes over, then those it allocates
        sub = sub.replace(invars=[*sub.constvars, *sub.invars], constvars=[])
        return sub if len(sub.invars) >= len(eqn.invars) else None
    return sub if len(sub.invars) == len(eqn.invars) else None


def _per_device(eqn: Any) -> int:
    """How many times a call-like equation runs its jaxpr: once per device of a ``shard_map``'s
    mesh or a ``pmap``'s axis, else once."""
    name = eqn.primitive.name
    if name == "shard_map":
        size = getattr(eqn.params.get("mesh"), "size", None)
    elif name == "xla_pmap":
        size = eqn.params.get("axis_size")
    else:
        return 1
    if not isinstance(size, (int, np.integer)) or size < 1:
        raise Unreadable(f"the number of devices a {name} runs on is not known")
    return int(size)


def _shards(eqn: Any, values: list[Any]) -> list[Any]:
    """Known values as a call's jaxpr sees them: on a mesh of several devices each sees a shard,
    so only a splat (one number everywhere) stays known."""
    if _per_device(eqn) == 1:
        return values
    return [x if isinstance(x, np.ndarray) and x.ndim == 0 else None for x in values]


def _writes(eqn: Any) -> list[Any]:
    """The refs (operands) ``eqn`` writes: the targets of its effects other than reads; an
    effect on no operand (I/O, a semaphore) is returned as None."""
    if eqn.primitive.name in _READS:
        return []
    targets = []
    for effect in getattr(eqn, "effects", ()) or ():
        if type(effect).__name__ == "ReadEffect":
            continue
        index = getattr(effect, "input", getattr(effect, "input_index", None))
        if isinstance(index, int):
            index = eqn.invars[index] if 0 <= index < len(eqn.invars) else None
        targets.append(index if any(index is v for v in eqn.invars) else None)
    return targets


# -- values the judge can evaluate ---------------------------------------------------------------
def _int_div(a: Any, b: Any) -> Any:
    if np.any(b == 0):
        raise ZeroDivisionError
    if a.dtype.kind in "iu":
        return (a - np.fmod(a, b)) // b  # rounds toward zero, as XLA's integer division
    return np.divide(a, b)


def _int_rem(a: Any, b: Any) -> Any:
    if a.dtype.kind in "iu" and np.any(b == 0):
        raise ZeroDivisionError
    return np.fmod(a, b)


_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
           "min": np.minimum, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal, "and": np.bitwise_and,
           "or": np.bitwise_or, "xor": np.bitwise_xor, "div": _int_div, "rem": _int_rem}
_UNARY = {"neg": np.negative, "abs": np.abs, "not": np.invert, "sign": np.sign}
# Shape and identity ops: a value every element of which is known stays known.
_SAME = frozenset({"broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "slice",
                   "rev", "copy", "copy_p", "stop_gradient", "optimization_barrier",
                   "multiple_of", "max_contiguous", "pvary", "sharding_constraint"})
_SELF_ZERO = frozenset({"sub", "xor"})  # x op x == 0
_SELF_TRUE, _SELF_FALSE = frozenset({"eq", "le", "ge"}), frozenset({"ne", "lt", "gt"})
_ANNIHILATE = frozenset({"mul", "and", "dot_general"})  # a zero operand makes a zero result


def _dtype(v: Any) -> Any:
    try:
        dtype = np.dtype(v.aval.dtype)
    except TypeError:  # an extended dtype (a PRNG key): not evaluated
        return None
    return dtype if dtype.kind in "biuf" else None


def _wide(x: Any) -> Any:
    x = np.asarray(x)
    return x.astype(np.int64) if x.dtype.kind in "iu" else x


# Pure integer primitives the module's walk folds on known arrays (with JAX's own rules, on the
# host): what computes a kernel's scalar-prefetch tables and dynamic grid from constants.
_FOLDED = frozenset("""
slice dynamic_slice dynamic_update_slice concatenate scatter scatter-add scatter_add gather
squeeze reshape broadcast_in_dim expand_dims convert_element_type ne eq lt le gt ge add sub mul
max min and or not xor select_n iota transpose cumsum cummax cummin reduce_sum reduce_max
reduce_min reduce_and reduce_or pad rem div clamp rev copy copy_p argmax argmin neg abs sign
""".split())


class ArrayValue:
    """A known array that is not a splat (a constant table, a kernel's scalar-prefetch
    operand): read only by a ``get`` at known indices, never computed with."""

    def __init__(self, data: Any) -> None:
        self.data = np.asarray(data)


class BlockValue(ArrayValue):
    """A kernel's blocked input whose data is known: each program's block (``data``'s first
    axis is the program), as its index map places it. A ``get`` reads each program's own."""


def _numbers(value: Any) -> Any:
    """A known value that is one number per var (a splat) or per program, else None (a table,
    :class:`ArrayValue`, is read by ``get``, never used as an index, a bound or a predicate)."""
    return value if isinstance(value, np.ndarray) else None


def _known_const(value: Any) -> Any:
    """A traced function's constant as a known value: integer and boolean ones only (read
    from an array's dtype and size first: a float input on a chip is never copied here)."""
    dtype, size = getattr(value, "dtype", None), getattr(value, "size", None)
    if dtype is not None and (np.dtype(dtype).kind not in "biu" or (size or 0) > MAX_PROGRAMS):
        return None
    try:
        data = np.asarray(value)
    except Exception:  # noqa: BLE001 - not an array the judge reads: unknown
        return None
    if data.dtype.kind not in "biu" or data.size > MAX_PROGRAMS:
        return None
    return data if data.ndim == 0 else ArrayValue(data)


class Values:
    """Values known in one jaxpr: every element of a var equal to one number (a splat, shape
    ``()``), or, in a kernel body, one number per program (shape ``(P,)``). Literals, program
    ids, the grid's size, and integer, boolean and basic float arithmetic on them are
    evaluated exactly in the var's dtype (wrapping as XLA's integers do); a float never
    decides a branch (no comparison of floats, no float made an integer), so no rounding
    can make a branch count that does not run. A product with a known zero is zero whatever
    the other operand, ``x - x`` is zero, ``x == x`` is true (NaN aside)."""

    def __init__(self, ids: list[Any] | None = None, grid: tuple[int, ...] = (),
                 fold: bool = False) -> None:
        self.ids, self.grid, self.fold = ids, grid, fold
        self.preset: dict[Any, Any] = {}  # vars whose values were computed on a trial's data

    def of(self, v: Any, env: dict[Any, Any]) -> Any:
        if _is_literal(v):
            try:
                value = np.asarray(v.val)
            except (TypeError, ValueError):
                return None
            return value if value.ndim == 0 and value.dtype.kind in "biuf" else None
        return env.get(v)

    def run(self, jaxpr: Any, inputs: list[Any], depth: int = 0) -> dict[Any, Any]:
        """The known values of ``jaxpr``'s vars, given its inputs' (None: unknown)."""
        if depth > MAX_DEPTH:
            raise Unreadable("the jaxpr nests calls more deeply than the counter reads")
        env = {v: x for v, x in zip(jaxpr.invars, inputs, strict=False) if x is not None}
        for eqn in jaxpr.eqns:
            outs = self.eqn(eqn, env, depth)
            for v, x in zip(eqn.outvars, outs, strict=False):
                x = self.preset.get(v, x) if x is None and self.preset else x
                if x is not None and not _dropped(v):
                    env[v] = x
        return env

    def eqn(self, eqn: Any, env: dict[Any, Any], depth: int) -> list[Any]:
        name = eqn.primitive.name
        ins = [self.of(v, env) for v in eqn.invars]
        sub = _call_jaxpr(eqn)
        if sub is not None:
            inner = self.run(sub, _shards(eqn, ins), depth + 1)
            return _shards(eqn, [self.of(v, inner) for v in sub.outvars])
        splat = self._splat(eqn, name, ins, env)
        if all(x is None for x in splat) and self.fold and name in _FOLDED \
                and all(x is not None for x in ins):
            return self._folded(eqn, ins)
        return splat

    def _splat(self, eqn: Any, name: str, ins: list[Any], env: dict[Any, Any]) -> list[Any]:
        none = [None] * len(eqn.outvars)
        if len(eqn.outvars) != 1:
            return none
        if any(isinstance(x, ArrayValue) for x in ins):
            return [self._read(eqn, ins, env)] if name == "get" else none
        out = eqn.outvars[0]
        dtype = _dtype(out)
        if dtype is None:
            return none
        try:
            value = self._value(eqn, name, ins, dtype)
        except (ArithmeticError, TypeError, ValueError):
            return none
        return [None if value is None else np.asarray(value).astype(dtype)]

    def _folded(self, eqn: Any, ins: list[Any]) -> list[Any]:
        """Outside kernels: a pure integer equation on known arrays, run with JAX's own rule
        on the host (small integer and boolean results only)."""
        none = [None] * len(eqn.outvars)
        if any(_dtype(v) is None or _dtype(v).kind not in "biu" or _size(v.aval) > MAX_PROGRAMS
               for v in eqn.outvars) or eqn.effects:
            return none
        args = []
        for v, x in zip(eqn.invars, ins, strict=True):
            data = x.data if isinstance(x, ArrayValue) else x
            shape = tuple(getattr(v.aval, "shape", ()))
            args.append(np.broadcast_to(np.asarray(data, _dtype(v) or data.dtype), shape))
        try:
            import jax

            with jax.default_device(jax.devices("cpu")[0]):
                outs = eqn.primitive.bind(*args, **eqn.params)
        except Exception:  # noqa: BLE001 - not folded: unknown
            return none
        outs = outs if eqn.primitive.multiple_results else [outs]
        folded = [np.asarray(o) for o in outs]
        return [o if o.ndim == 0 else ArrayValue(o) for o in folded]

    def _read(self, eqn: Any, ins: list[Any], env: dict[Any, Any]) -> Any:
        """A scalar ``get`` from a known array at known indices (per program), else None."""
        from jax import tree_util

        table = ins[0]
        if getattr(eqn.outvars[0].aval, "shape", None) != ():
            return None
        try:
            transforms = tree_util.tree_unflatten(eqn.params["tree"], list(eqn.invars[1:]))
        except Exception:  # noqa: BLE001 - an indexer this reader does not know
            return None
        per_program = isinstance(table, BlockValue)
        ndim = table.data.ndim - per_program
        if len(transforms) == 0 and ndim == 0:  # the whole of a one-element ref
            indices: Any = ()
        elif len(transforms) != 1:
            return None
        else:
            indices = getattr(transforms[0], "indices", None)
        if indices is None or len(indices) != ndim:
            return None
        picks = [np.arange(len(table.data))] if per_program else []
        for index in indices:
            value = np.asarray(index) if isinstance(index, int) else (
                self.of(index, env) if hasattr(index, "aval") else None)
            if value is None or value.dtype.kind not in "iu":
                return None
            picks.append(_wide(value))
        picks = list(np.broadcast_arrays(*picks)) if picks else []
        if any(np.any(p < 0) or np.any(p >= n) for p, n in zip(picks, table.data.shape,
                                                                strict=True)):
            return None
        value = table.data[tuple(picks)]
        return np.asarray(value).astype(_dtype(eqn.outvars[0]))

    def _value(self, eqn: Any, name: str, ins: list[Any], dtype: Any) -> Any:
        if name == "program_id" and self.ids is not None:
            return self.ids[int(eqn.params["axis"])]
        if name == "num_programs" and self.grid:
            return self.grid[int(eqn.params["axis"])]
        known = [x for x in ins if x is not None]
        if name in _ANNIHILATE and any(np.all(x == 0) for x in known):
            return 0
        if name == "or" and dtype.kind == "b" and any(np.all(x) for x in known):
            return True
        a = eqn.invars[0] if eqn.invars else None
        same = len(eqn.invars) == 2 and not _is_literal(a) and a is eqn.invars[1]
        if same and name in _SELF_ZERO:
            return 0
        if same and name in _SELF_TRUE | _SELF_FALSE and _dtype(a) is not None \
                and _dtype(a).kind != "f":  # NaN != NaN: a float's never decides
            return name in _SELF_TRUE
        if name == "select_n" and ins[0] is not None:
            which = np.clip(_wide(ins[0]).astype(np.int64), 0, len(ins) - 2)
            cases = ins[1:]
            if which.ndim == 0:
                return cases[int(which)]
            if any(c is None for c in cases):
                return None
            return np.choose(which, [np.broadcast_to(c, which.shape) for c in cases])
        if len(known) != len(ins) or not ins:
            return None
        if name in _SAME or name == "convert_element_type":
            x = ins[0]
            if dtype.kind == "b" and x.dtype.kind != "b":
                return x != 0
            if dtype.kind in "iub" and x.dtype.kind == "f":  # floats never decide a branch
                return None
            return x
        if name in _UNARY and len(ins) == 1:
            return _UNARY[name](_wide(ins[0]))
        if name in _BINARY and len(ins) == 2:
            if dtype.kind == "b" and any(x.dtype.kind == "f" for x in ins):
                return None  # a float comparison: rounding could differ on the chip
            with np.errstate(all="ignore"):
                return _BINARY[name](_wide(ins[0]), _wide(ins[1]))
        return None


# -- which values reach the result ---------------------------------------------------------------
@dataclass
class _Relevance:
    """One jaxpr's equations and vars whose values reach its relevant outputs or a write to
    a live ref, with what each nested jaxpr must produce (its relevant outputs)."""

    eqns: set[int] = field(default_factory=set)
    vars: set[Any] = field(default_factory=set)
    inputs: list[bool] = field(default_factory=list)


def _relevance(jaxpr: Any, out_rel: list[bool], env: dict[Any, Any], values: Values,
               dead: frozenset[Any] = frozenset(), depth: int = 0) -> _Relevance:
    """Backwards from ``jaxpr``'s relevant outputs and its writes to refs not in ``dead``:
    the equations and vars that matter. A var whose value is known (a constant) does not
    depend on what made it; a select by a known predicate depends on the case it picks; a
    ``cond`` with a known index on the branch it takes; loops to a fixed point."""
    if depth > MAX_DEPTH:
        raise Unreadable("the jaxpr nests more deeply than the counter reads")
    rel = _Relevance()
    rel.vars = {v for v, r in zip(jaxpr.outvars, out_rel, strict=False)
                if r and not _is_literal(v)}
    for eqn in reversed(jaxpr.eqns):
        outs = [v in rel.vars for v in eqn.outvars]
        sink = any(t is None or t not in dead for t in _writes(eqn))
        if not any(outs) and not sink:
            continue
        rel.eqns.add(id(eqn))
        if not sink and all(values.of(v, env) is not None
                            for v, r in zip(eqn.outvars, outs, strict=True) if r):
            continue  # a constant: whatever made it does not matter
        for v, r in zip(eqn.invars, _operands(eqn, outs, env, values, dead, depth), strict=True):
            if r and not _is_literal(v):
                rel.vars.add(v)
    rel.inputs = [v in rel.vars for v in jaxpr.invars]
    return rel


def _sub_dead(sub: Any, operands: list[Any], dead: frozenset[Any]) -> frozenset[Any]:
    return frozenset(s for s, o in zip(sub.invars, operands, strict=False)
                     if not _is_literal(o) and o in dead)


def _operands(eqn: Any, outs: list[bool], env: dict[Any, Any], values: Values,
              dead: frozenset[Any], depth: int) -> list[bool]:
    """Which operands of a relevant ``eqn`` matter, given which of its outputs do."""
    name, n = eqn.primitive.name, len(eqn.invars)
    if name == "select_n":
        which = values.of(eqn.invars[0], env)
        if isinstance(which, np.ndarray) and which.ndim == 0:
            chosen = int(np.clip(int(which), 0, n - 2))
            return [False] + [i == chosen for i in range(n - 1)]
        return [True] * n
    sub = _call_jaxpr(eqn)
    if sub is not None:
        inner = values.run(sub, _shards(eqn, [values.of(v, env) for v in eqn.invars]), depth + 1)
        return _relevance(sub, outs, inner, values, _sub_dead(sub, eqn.invars, dead),
                          depth + 1).inputs[:n]
    if name == "cond":
        branches = [_jaxpr(b) for b in eqn.params["branches"]]
        ops = eqn.invars[1:]
        taken = _taken(_numbers(values.of(eqn.invars[0], env)), len(branches))
        used = [False] * len(ops)
        for b, branch in enumerate(branches):
            if taken is not None and b not in taken:
                continue
            inner = values.run(branch, [values.of(v, env) for v in ops], depth + 1)
            got = _relevance(branch, outs, inner, values, _sub_dead(branch, ops, dead),
                             depth + 1).inputs
            used = [u or g for u, g in zip(used, got, strict=True)]
        return [True] + used
    if name == "scan":
        return _scan_operands(eqn, outs, env, values, dead, depth)[0]
    if name == "while":
        return _while_operands(eqn, outs, env, values, dead, depth)[0]
    return [True] * n


def _taken(index: Any, n: int) -> set[int] | None:
    """The branches a known index takes (on some program), or None when it is unknown. An
    index outside ``[0, n)`` takes none here: where the branch is counted it raises
    (:class:`BranchOutOfRange`, :func:`_check_index`)."""
    if index is None:
        return None
    return {int(i) for i in np.unique(np.asarray(index, np.int64)) if 0 <= i < n}


def _scan_operands(eqn: Any, outs: list[bool], env: dict[Any, Any], values: Values,
                   dead: frozenset[Any], depth: int) -> tuple[list[bool], list[bool]]:
    """(which operands of a relevant ``scan`` matter, which outputs of its body do)."""
    body = _jaxpr(eqn.params["jaxpr"])
    nc, ncar = compat.scan_counts(eqn)
    wanted = list(outs[:ncar])
    carry = wanted  # the body's carry results that matter: the last, or a later step's start
    ins = [values.of(v, env) for v in eqn.invars[:nc]] + [None] * (len(body.invars) - nc)
    inner = values.run(body, ins, depth + 1)
    body_dead = _sub_dead(body, eqn.invars, dead)
    for _ in range(ncar + 1):
        got = _relevance(body, carry + list(outs[ncar:]), inner, values, body_dead,
                         depth + 1).inputs
        grown = [w or g for w, g in zip(wanted, got[nc:nc + ncar], strict=True)]
        if grown == carry:
            break
        carry = grown
    return got[:nc] + got[nc:nc + ncar] + got[nc + ncar:], carry + list(outs[ncar:])


def _while_operands(eqn: Any, outs: list[bool], env: dict[Any, Any], values: Values,
                    dead: frozenset[Any], depth: int) -> tuple[list[bool], list[bool]]:
    """(which operands of a relevant ``while`` matter, which outputs of its body do)."""
    cn, bn = int(eqn.params["cond_nconsts"]), int(eqn.params["body_nconsts"])
    cond, body = _jaxpr(eqn.params["cond_jaxpr"]), _jaxpr(eqn.params["body_jaxpr"])
    cond_ops, body_ops = eqn.invars[:cn], eqn.invars[cn:cn + bn]
    carries = eqn.invars[cn + bn:]
    cond_in = values.run(cond, [values.of(v, env) for v in cond_ops] + [None] * len(carries),
                         depth + 1)
    body_in = values.run(body, [values.of(v, env) for v in body_ops] + [None] * len(carries),
                         depth + 1)
    # the trip count decides every output: the condition's operands matter
    cond_rel = _relevance(cond, [True], cond_in, values, frozenset(), depth + 1).inputs
    carry = [o or c for o, c in zip(outs, cond_rel[cn:], strict=True)]
    body_dead = _sub_dead(body, list(body_ops) + list(carries), dead)
    for _ in range(len(carries) + 1):
        got = _relevance(body, carry, body_in, values, body_dead, depth + 1).inputs
        grown = [c or g for c, g in zip(carry, got[bn:], strict=True)]
        if grown == carry:
            break
        carry = grown
    return cond_rel[:cn] + got[:bn] + carry, carry


def _trips(eqn: Any, env: dict[Any, Any], values: Values) -> Any:
    """The trip count of a ``while`` the judge can prove: ``fori_loop``'s form (a counter
    carry compared ``<`` with a carry passed through unchanged, the counter stepped by one),
    both bounds known; per program in a kernel body. None otherwise."""
    cn, bn = int(eqn.params["cond_nconsts"]), int(eqn.params["body_nconsts"])
    cond, body = _jaxpr(eqn.params["cond_jaxpr"]), _jaxpr(eqn.params["body_jaxpr"])
    if len(cond.eqns) != 1 or cond.eqns[0].primitive.name != "lt" or cn:
        return None
    test = cond.eqns[0]
    if list(test.outvars) != list(cond.outvars) or any(_is_literal(v) for v in test.invars):
        return None
    carries = list(cond.invars)
    if test.invars[0] not in carries or test.invars[1] not in carries:
        return None
    i, j = carries.index(test.invars[0]), carries.index(test.invars[1])
    if i == j:
        return None
    counter, bound = body.invars[bn + i], body.invars[bn + j]
    if body.outvars[j] is not bound:  # the bound passes through unchanged
        return None
    step = next((e for e in body.eqns if e.outvars and e.outvars[0] is body.outvars[i]), None)
    if step is None or step.primitive.name != "add" or counter not in step.invars:
        return None
    other = step.invars[1] if step.invars[0] is counter else step.invars[0]
    if not _is_literal(other) or values.of(other, {}) is None or int(values.of(other, {})) != 1:
        return None
    carries_out = eqn.invars[cn + bn:]
    lo, hi = _numbers(values.of(carries_out[i], env)), _numbers(values.of(carries_out[j], env))
    if lo is None or hi is None or _dtype(carries_out[i]) is None \
            or _dtype(carries_out[i]).kind not in "iu":
        return None
    return np.maximum(_wide(hi) - _wide(lo), 0)


# -- the kernel bodies ---------------------------------------------------------------------------
# The inputs (refs) of a jaxpr that its walk surely uses, by index, each with the programs that
# surely write it: a bool per program (the shape of the walk's ``mask``; none where it is only
# read).
Uses = dict[int, Any]


def _union(into: Uses, more: Uses, keys: Any = None, mask: Any = None) -> Uses:
    """Adds ``more``'s uses to ``into`` (its keys renamed by ``keys``, a dict or a function;
    a key it maps to None is left out; writers limited to ``mask``): used by either, written
    by either's writers. Returns ``into``."""
    for k, writers in more.items():
        key = keys(k) if callable(keys) else (keys.get(k) if keys is not None else k)
        if key is None:
            continue
        writers = writers if mask is None else writers & mask
        into[key] = into[key] | writers if key in into else writers
    return into


def _intersection(uses: list[Uses]) -> Uses:
    """What every one of ``uses`` uses, written by the programs that write it in all."""
    if not uses:
        return {}
    keys = set.intersection(*(set(u) for u in uses))
    return {k: np.logical_and.reduce([u[k] for u in uses]) for k in keys}


class _Body:
    """The FLOPs one kernel's body surely does, per program, and the refs it surely uses,
    with the programs that surely write each."""

    def __init__(self, values: Values, programs: int, price: Any = None) -> None:
        # ``price``: what one leaf equation costs (FLOPs by default; a DMA's bytes)
        self.values, self.programs, self.price = values, programs, price or leaf_flops

    def work(self, jaxpr: Any, inputs: list[Any], out_rel: list[bool], mask: Any,
             dead: frozenset[Any], depth: int = 0) -> tuple[Any, Uses]:
        """(FLOPs per program, ``jaxpr``'s inputs surely used: :data:`Uses`) of ``jaxpr`` run
        on the programs of ``mask``."""
        if depth > MAX_DEPTH:
            raise Unreadable("the kernel body nests more deeply than the counter reads")
        env = self.values.run(jaxpr, inputs, depth)
        rel = _relevance(jaxpr, out_rel, env, self.values, dead, depth)
        flops = np.zeros(len(mask))
        position = {v: i for i, v in enumerate(jaxpr.invars)}
        used: Uses = {}
        for eqn in jaxpr.eqns:
            if id(eqn) not in rel.eqns:
                continue
            outs = [v in rel.vars for v in eqn.outvars]
            f, operands = self.eqn(eqn, env, outs, mask, dead, depth)
            flops = flops + f
            mine = {k: position[v] for k, v in enumerate(eqn.invars)
                    if not _is_literal(v) and v in position}
            _union(used, operands, mine, mask)
        return flops, used

    def eqn(self, eqn: Any, env: dict[Any, Any], outs: list[bool], mask: Any,
            dead: frozenset[Any], depth: int) -> tuple[Any, Uses]:
        name = eqn.primitive.name
        of = self.values.of
        sub = _call_jaxpr(eqn)
        if sub is not None:
            f, used = self.work(sub, _shards(eqn, [of(v, env) for v in eqn.invars]), outs, mask,
                                _sub_dead(sub, eqn.invars, dead), depth + 1)
            return f * _per_device(eqn), {k: w for k, w in used.items() if k < len(eqn.invars)}
        if name == "cond":
            return self.cond(eqn, env, outs, mask, dead, depth)
        if name == "scan":
            body = _jaxpr(eqn.params["jaxpr"])
            length = int(eqn.params.get("length", 0))
            if length <= 0:
                return 0.0, {}
            nc = compat.scan_counts(eqn)[0]
            ins = [of(v, env) for v in eqn.invars[:nc]] + [None] * (len(body.invars) - nc)
            body_rel = _scan_operands(eqn, outs, env, self.values, dead, depth)[1]
            f, used = self.work(body, ins, body_rel, mask, _sub_dead(body, eqn.invars, dead),
                                depth + 1)
            return length * f, used
        if name == "while":
            return self.loop(eqn, env, outs, mask, dead, depth)
        if _subs(eqn):  # what else nests jaxprs: nothing in it is sure to run
            return 0.0, {}
        targets, none = _writes(eqn), np.zeros(mask.shape, bool)
        return self.price(eqn), {k: mask if any(v is t for t in targets) else none
                                 for k, v in enumerate(eqn.invars)}

    def cond(self, eqn: Any, env: dict[Any, Any], outs: list[bool], mask: Any,
             dead: frozenset[Any], depth: int) -> tuple[Any, Uses]:
        branches = [_jaxpr(b) for b in eqn.params["branches"]]
        ops = eqn.invars[1:]
        inputs = [self.values.of(v, env) for v in ops]
        sub_dead = [_sub_dead(b, ops, dead) for b in branches]
        index = _numbers(self.values.of(eqn.invars[0], env))
        none = np.zeros(mask.shape, bool)
        if index is None:  # the cheapest branch, per program; what every branch uses and writes
            results = [self.work(b, inputs, outs, mask, d, depth + 1)
                       for b, d in zip(branches, sub_dead, strict=True)]
            flops = np.min(np.stack([np.broadcast_to(f, mask.shape) for f, _ in results]),
                           axis=0)
            used = _intersection([u for _, u in results])
            return flops, {k + 1: w for k, w in used.items()} | {0: none}
        _check_index(index, len(branches), mask)  # the programs that run it: in range
        which = np.broadcast_to(_wide(index), mask.shape)
        flops, used = np.zeros(mask.shape), {0: none}
        for b, branch in enumerate(branches):
            runs = mask & (which == b)
            if not runs.any():
                continue
            f, u = self.work(branch, inputs, outs, runs, sub_dead[b], depth + 1)
            flops = flops + np.where(which == b, f, 0.0)
            _union(used, u, lambda k: k + 1, runs)
        return flops, used

    def loop(self, eqn: Any, env: dict[Any, Any], outs: list[bool], mask: Any,
             dead: frozenset[Any], depth: int) -> tuple[Any, Uses]:
        cn, bn = int(eqn.params["cond_nconsts"]), int(eqn.params["body_nconsts"])
        trips = _trips(eqn, env, self.values)
        none = np.zeros(mask.shape, bool)
        used = {k: none for k in [*range(cn), *range(cn + bn, len(eqn.invars))]}  # the test
        if trips is None:
            return 0.0, used
        trips = np.broadcast_to(trips, mask.shape)
        runs = mask & (trips > 0)
        if not runs.any():
            return 0.0, used
        body = _jaxpr(eqn.params["body_jaxpr"])
        ops = list(eqn.invars[cn:cn + bn]) + list(eqn.invars[cn + bn:])
        ins = [self.values.of(v, env) for v in eqn.invars[cn:cn + bn]] + \
            [None] * (len(body.invars) - bn)
        body_rel = _while_operands(eqn, outs, env, self.values, dead, depth)[1]
        f, u = self.work(body, ins, body_rel, runs, _sub_dead(body, ops, dead), depth + 1)
        return trips * f, _union(used, u, lambda k: cn + k, runs)


def _programs(eqn: Any, bounds: list[Any] = ()) -> tuple[int, tuple[int, ...] | None]:
    """(number of programs, the grid where every dimension is a known int, else None); a
    dynamic dimension takes its bound's known value (``bounds``, in order). A grid with a
    dimension of 0 runs no program; one with a dimension the judge cannot evaluate (or a mesh
    it cannot read) counts none either: no credit for programs that may not run."""
    grid_mapping = eqn.params.get("grid_mapping")
    if grid_mapping is not None:
        given = iter(bounds)
        grid = tuple(g if isinstance(g, int) else _bound(next(given, None))
                     for g in getattr(grid_mapping, "grid", ()) or ())
        if not all(isinstance(g, int) for g in grid):
            return 0, None
        programs = math.prod(grid)
        return (programs, grid) if programs > 0 else (0, None)
    mesh = compat.kernel_mesh(eqn)
    shape = getattr(mesh, "shape", None)
    if shape is None:
        return 0, None
    values = shape.values() if isinstance(shape, dict) else shape
    try:
        return max(math.prod(int(v) for v in values), 0), None
    except (TypeError, ValueError):
        return 0, None


def _bound(value: Any) -> Any:
    """A dynamic grid dimension's known size, or None."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    return None


@dataclass
class _Call:
    """One kernel equation, ready for its body's walk: how its operands split, its programs,
    and the body's values and mask (every program, or one representative)."""

    grid_mapping: Any
    start: int  # the operand where the body's inputs start (after the dynamic grid bounds)
    programs: int
    grid: tuple[int, ...] | None
    body: Any
    values: Values
    mask: Any
    scale: float
    tables: list[Any] = field(default_factory=list)  # the scalar-prefetch tables' known values


def _call(eqn: Any, operands: list[Any]) -> _Call:
    grid_mapping = eqn.params.get("grid_mapping")
    n_dyn = int(getattr(grid_mapping, "num_dynamic_grid_bounds", 0) or 0)
    lead = _leading(eqn)
    programs, grid = _programs(eqn, operands[lead:lead + n_dyn])
    body = eqn.params.get("jaxpr")
    body = _jaxpr(body) if body is not None else next(iter(_subs(eqn)), None)
    # A vmapped kernel's grid has the batch dimensions ``vmapped_dims`` added; its body's
    # ``program_id(axis)`` and ``num_programs(axis)`` name the axis-th of the others (the
    # user's grid), as Mosaic lowers them and Pallas' interpreter runs them.
    vmapped = set(getattr(grid_mapping, "vmapped_dims", ()) or ())
    user = [a for a in range(len(grid or ())) if a not in vmapped]
    user_grid = tuple(grid[a] for a in user) if grid is not None else ()
    if grid is not None and programs <= MAX_PROGRAMS:
        ids = [a.reshape(-1) for a in np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")]
        values, mask, scale = Values([ids[a] for a in user], user_grid), np.ones(programs, bool), 1.0
    else:  # one representative program, ids unknown
        values, mask, scale = Values(None, user_grid), np.ones(1, bool), float(programs)
    n_index = int(getattr(grid_mapping, "num_index_operands", 0) or 0)
    tables = [ArrayValue(x) if isinstance(x, np.ndarray) and x.ndim else x
              for x in operands[lead + n_dyn:lead + n_dyn + n_index]]
    return _Call(grid_mapping, lead + n_dyn, programs, grid, body, values, mask, scale, tables)


def _leading(eqn: Any) -> int:
    """How many operands of a ``pallas_call`` come before its dynamic grid bounds (refs it
    closes over; normally none)."""
    mapping = eqn.params.get("grid_mapping")
    if mapping is None:
        return 0
    n_dyn = int(getattr(mapping, "num_dynamic_grid_bounds", 0) or 0)
    n_index = int(getattr(mapping, "num_index_operands", 0) or 0)
    n_in = int(getattr(mapping, "num_inputs", len(eqn.invars) - n_dyn - n_index))
    return max(len(eqn.invars) - n_dyn - n_index - n_in, 0)


def _body_inputs(call: _Call, operands: list[Any]) -> tuple[list[Any], int, int, int]:
    """(the body's known inputs: the scalar-prefetch tables, where known; the numbers of index
    operands, inputs and outputs)."""
    body, grid_mapping = call.body, call.grid_mapping
    n_index = int(getattr(grid_mapping, "num_index_operands", 0) or 0)
    start = call.start
    n_in = int(getattr(grid_mapping, "num_inputs", len(operands) - start - n_index))
    n_out = int(getattr(grid_mapping, "num_outputs", 0) or 0)
    inputs: list[Any] = [None] * len(body.invars)
    for k in range(min(n_index, len(body.invars), len(call.tables))):  # the prefetch tables
        inputs[k] = call.tables[k]
    mappings = getattr(grid_mapping, "block_mappings", ()) or ()
    for k in range(min(n_in, len(mappings), len(body.invars) - n_index)):  # known blocked inputs
        known = operands[start + n_index + k] if start + n_index + k < len(operands) else None
        if known is not None:
            inputs[n_index + k] = _blocks(call, mappings[k], known, call.tables)
    return inputs, n_index, n_in, n_out


MAX_BLOCK_ELEMENTS = 1 << 20  # the most elements of known blocks, over all programs, it reads


def _blocks(call: _Call, mapping: Any, known: Any, tables: list[Any]) -> BlockValue | None:
    """Each program's block of a known (integer) blocked input, as its index map places it:
    per-program lengths, offsets, group ids a kernel loads and bounds its loops by. None where
    the judge cannot tell each program's block exactly (a representative program, an index
    map it cannot evaluate, a block that reads past the array's edge, whose padding is
    undefined, or memory the kernel reads itself)."""
    from jaxbench.evaluator.judge.blocks import block_kind, unplaced

    from_blocks = not unplaced(mapping)
    data = known.data if isinstance(known, ArrayValue) else known
    shape = getattr(getattr(mapping, "array_aval", None), "shape", None)
    if isinstance(data, np.ndarray) and data.ndim == 0 and shape is not None:
        data = np.broadcast_to(data, shape)  # a splat: every element is that number
    grid = call.grid
    if not from_blocks or grid is None or call.values.ids is None \
            or not isinstance(data, np.ndarray) or data.dtype.kind not in "biu":
        return None
    dims = [block_kind(d) for d in mapping.block_shape]
    index_map = getattr(mapping.index_map_jaxpr, "jaxpr", mapping.index_map_jaxpr)
    if None in dims or len(dims) != data.ndim \
            or len(index_map.invars) != len(grid) + len(tables) \
            or call.programs * math.prod(size for _, size in dims) > MAX_BLOCK_ELEMENTS:
        return None
    ids = [a.reshape(-1) for a in np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")]
    values = Values(ids, grid)
    env = values.run(index_map, [*ids, *tables])
    indices = [values.of(v, env) for v in index_map.outvars]
    if any(i is None or isinstance(i, ArrayValue) for i in indices) or len(indices) != data.ndim:
        return None
    starts = []
    for (kind, size), index, extent in zip(dims, indices, data.shape, strict=True):
        start = np.broadcast_to(_wide(np.asarray(index)), (call.programs,))
        if kind == "blocked":
            start = start * size
        elif kind == "element":
            return None  # an element offset may read padding
        if np.any(start < 0) or np.any(start + size > extent):
            return None  # past the edge: padding, whose values are undefined
        starts.append(start)
    block = np.stack([data[tuple(int(st[q]) if kind == "squeezed" else
                                 slice(int(st[q]), int(st[q]) + size)
                                 for (kind, size), st in zip(dims, starts, strict=True))]
                      for q in range(call.programs)])
    return BlockValue(block)


def _kernel(eqn: Any, out_rel: list[bool], operands: list[Any]) -> tuple[float, float, int]:
    """(FLOPs, bytes, programs) one call of kernel ``eqn`` surely does, given which of its
    results reach the result and its operands' known values (a dynamic grid's bounds, the
    scalar-prefetch tables). A grid that runs no program (or whose size the judge cannot
    evaluate) does nothing; an output counts its bytes only where the body surely writes it
    (an output aliased to an input and never written is that input, passed through)."""
    call = _call(eqn, operands)
    body, programs, values, mask, scale = (call.body, call.programs, call.values, call.mask,
                                           call.scale)
    if body is None or programs <= 0:
        return 0.0, 0.0, programs
    if call.grid_mapping is None:  # core_map / mpmd_map: refs in, nothing out; count what reaches
        flops, _ = _Body(values, programs).work(body, [None] * len(body.invars),
                                                [True] * len(body.outvars), mask, frozenset())
        moved = sum(_nbytes(v.aval) for v in eqn.invars) + sum(
            _nbytes(v.aval) for v, r in zip(eqn.outvars, out_rel, strict=True) if r)
        return float(np.sum(flops)) * scale, float(moved), programs
    inputs, n_index, n_in, n_out = _body_inputs(call, operands)
    n_out = n_out or len(eqn.outvars)
    out_refs = body.invars[n_index + n_in:n_index + n_in + n_out]
    read = {getattr(effect, "input", None) for e in body.eqns for effect in (e.effects or ())
            if type(effect).__name__ != "WriteEffect"}  # a ref read back is no dead end
    dead = frozenset(ref for ref, r in zip(out_refs, out_rel, strict=False)
                     if not r and ref not in read)
    flops, used = _Body(values, programs).work(body, inputs, [], mask, dead)
    # an output is used where the body surely writes it in full, not where it only reads it
    full = _written_in_full(eqn, call, used, n_index + n_in)
    used = {k: w for k, w in used.items()
            if not n_index + n_in <= k < n_index + n_in + n_out or k - n_index - n_in in full}
    n_dyn = call.start  # the dynamic grid bounds (and any refs before them)
    every = np.ones(programs, bool) if call.grid is not None and programs <= MAX_PROGRAMS else None
    moved = sum(_nbytes(v.aval) if k < n_index else _moved(call, k - n_index, v.aval, every)
                for k, v in enumerate(eqn.invars[n_dyn:]) if k in used)
    moved += sum(_moved(call, n_in + j, v.aval, used[n_index + n_in + j])
                 for j, (v, r) in enumerate(zip(eqn.outvars, out_rel, strict=True))
                 if r and n_index + n_in + j in used)
    # operands the kernel moves itself (ANY memory): the bytes of its DMAs that surely run,
    # at most those operands (a block copied again and again moves no more of them)
    by_dma = sum(_nbytes(v.aval) for k, v in enumerate(eqn.invars[n_dyn:])
                 if k in used and k >= n_index and _by_dma(call, k - n_index))
    by_dma += sum(_nbytes(v.aval) for j, (v, r) in enumerate(zip(eqn.outvars, out_rel, strict=True))
                  if r and n_index + n_in + j in used and _by_dma(call, n_in + j))
    if by_dma:
        dma, _ = _Body(values, programs, _dma_bytes).work(body, inputs, [], mask, dead)
        moved += min(float(by_dma), float(np.sum(dma)) * scale)
    return float(np.sum(flops)) * scale, float(moved), programs


def _by_dma(call: _Call, m: int) -> bool:
    """Whether kernel operand (block mapping) ``m`` lives in ``ANY`` memory: the kernel moves
    it with its own DMAs."""
    from jaxbench.evaluator.judge.blocks import memory_space

    mappings = getattr(call.grid_mapping, "block_mappings", ()) or ()
    space = memory_space(mappings[m]) if m < len(mappings) else None
    return space is not None and "any" in space


def _dma_bytes(eqn: Any) -> float:
    """The bytes one ``dma_start`` moves: its source's (transformed) shape; other equations
    move none by DMA."""
    from jax import tree_util

    if eqn.primitive.name != "dma_start":
        return 0.0
    try:
        src = tree_util.tree_unflatten(eqn.params["tree"], list(eqn.invars))[0]
        ref = getattr(src, "ref", src)
        shape, dtype = tuple(ref.aval.shape), ref.aval.dtype
        for transform in getattr(src, "transforms", ()):  # a slice of the ref: its shape
            shape = tuple(transform.transform_shape(shape)) \
                if hasattr(transform, "transform_shape") else tuple(transform.get_indexer_shape())
        return float(math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize)
    except Exception:  # noqa: BLE001 - a DMA this reader cannot size: it moves nothing known
        return 0.0


def _moved(call: _Call, m: int, aval: Any, programs: Any) -> float:
    """The bytes of a kernel operand (block mapping ``m``) that cross HBM: the distinct blocks
    that ``programs`` (a bool per program; None: not enumerated) place, as its index map places
    them, or, where the judge cannot evaluate the map, a block per program that runs; never more
    than the operand. An operand the kernel moves itself (``ANY`` memory) counts none here: its
    DMAs count (:func:`_dma_bytes`); one whose memory space cannot be read counts in full."""
    from jaxbench.evaluator.judge.blocks import block_dims, memory_space

    full = float(_nbytes(aval))
    mappings = getattr(call.grid_mapping, "block_mappings", ()) or ()
    if m >= len(mappings):
        return full
    mapping = mappings[m]
    space = memory_space(mapping)
    if space is None:
        return full  # where the blocks lie cannot be read: as before, the operand
    if "any" in space:
        return 0.0  # moved by the kernel's own DMAs: counted by them (_dma_bytes)
    dims = block_dims(mapping)
    shape = tuple(int(d) for d in getattr(aval, "shape", ()))
    if len(dims) != len(shape):
        return full
    block = float(math.prod(dims)) * np.dtype(aval.dtype).itemsize
    distinct = _distinct_blocks(call, mapping, programs) if programs is not None else None
    if distinct is None:
        distinct = call.programs if programs is None else int(np.count_nonzero(programs))
    return min(full, block * distinct)


def _distinct_blocks(call: _Call, mapping: Any, programs: Any) -> int | None:
    """How many distinct blocks the programs in ``programs`` place (their index maps' results);
    None where the judge cannot evaluate the index map."""
    grid = call.grid
    index_map = getattr(mapping.index_map_jaxpr, "jaxpr", mapping.index_map_jaxpr)
    if grid is None or len(programs) != call.programs or len(index_map.invars) < len(grid):
        return None
    tables = (list(call.tables) + [None] * len(index_map.invars))[:len(index_map.invars) - len(grid)]
    ids = [a.reshape(-1) for a in np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")]
    values = Values(ids, grid)
    env = values.run(index_map, [*ids, *tables])
    indices = [values.of(v, env) for v in index_map.outvars]
    if any(i is None or isinstance(i, ArrayValue) for i in indices):
        return None
    if not indices:
        return 1 if np.any(programs) else 0
    rows = np.stack([np.broadcast_to(_wide(np.asarray(i)), (call.programs,)) for i in indices])
    return int(len(np.unique(rows[:, np.asarray(programs, bool)], axis=1).T))


def _written_in_full(eqn: Any, call: _Call, used: Uses, first: int) -> set[int]:
    """The outputs of kernel ``eqn`` its body surely writes (``used``: the body's refs with
    their writers; ``first``: the body's first output ref): some program that surely runs surely
    writes it (a store not in a branch that may not run, nor in a loop of unproven trips),
    and, where the judge can evaluate the output's index map, the blocks of the programs that
    write it cover it."""
    full = set()
    for j in range(len(eqn.outvars)):
        writers = used.get(first + j)
        if writers is not None and np.any(writers) and _covered(eqn, call, j, writers):
            full.add(j)
    return full


def _aliases(eqn: Any) -> dict[int, int]:
    """A ``pallas_call``'s aliased outputs: output index -> the position among its operands
    (the equation's invars) of the input it aliases."""
    pairs = eqn.params.get("input_output_aliases") or ()
    mapping = eqn.params.get("grid_mapping")
    if not pairs or mapping is None:
        return {}
    start = _leading(eqn) + int(getattr(mapping, "num_dynamic_grid_bounds", 0) or 0)
    return {int(o): start + int(i) for i, o in pairs if start + int(i) < len(eqn.invars)}


def _unwritten_aliases(eqn: Any, operands: list[Any]) -> dict[int, int]:
    """Of kernel ``eqn``'s aliased outputs (:func:`_aliases`), those its body does not surely
    write in full (:func:`_written_in_full`): output index -> the operand position of the
    input that passes through."""
    aliases = _aliases(eqn)
    if not aliases:
        return {}
    call = _call(eqn, operands)
    if call.body is None or call.programs <= 0:
        return aliases  # no program runs: every aliased input passes through
    inputs, n_index, n_in, _ = _body_inputs(call, operands)
    _, used = _Body(call.values, call.programs).work(call.body, inputs, [], call.mask,
                                                     frozenset())
    full = _written_in_full(eqn, call, used, n_index + n_in)
    return {j: position for j, position in aliases.items() if j not in full}


def _covered(eqn: Any, call: _Call, j: int, writers: Any) -> bool:
    """Whether the blocks of kernel output ``j`` that the programs in ``writers`` write cover
    it, dimension by dimension (as :mod:`.coverage` reads the grid, with :mod:`.blocks`'
    helpers); True where the judge cannot tell (a representative program, an output in
    ``ANY`` memory, written by DMA, an index map it cannot evaluate)."""
    from jaxbench.evaluator.judge.blocks import block_kind, gaps, unplaced

    grid, mapping = call.grid, call.grid_mapping
    mappings = getattr(mapping, "block_mappings", ())
    n_in = int(getattr(mapping, "num_inputs", 0) or 0)
    if grid is None or len(writers) != call.programs or n_in + j >= len(mappings):
        return True
    block = mappings[n_in + j]
    if unplaced(block):
        return True
    shape = tuple(int(d) for d in eqn.outvars[j].aval.shape)
    dims = [block_kind(d) for d in block.block_shape]
    index_map = getattr(block.index_map_jaxpr, "jaxpr", block.index_map_jaxpr)
    if None in dims or len(dims) != len(shape) or len(index_map.invars) != len(grid):
        return True
    ids = [a.reshape(-1) for a in np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")]
    values = Values(ids, grid)
    env = values.run(index_map, list(ids))
    indices = [values.of(v, env) for v in index_map.outvars]
    if any(i is None for i in indices) or len(indices) != len(shape):
        return True
    for (kind, size), index, extent in zip(dims, indices, shape, strict=True):
        starts = np.broadcast_to(np.asarray(index, np.int64), (call.programs,))[writers]
        if kind == "blocked":
            starts = starts * size
        if gaps(starts, size, extent):
            return False
    return True


# -- the module --------------------------------------------------------------------------------
class _Module:
    """The walk of the traced function: its kernels, where they surely run and matter."""

    def __init__(self, lines: dict[int, tuple[str, int]]) -> None:
        self.lines, self.values = lines, Values(fold=True)
        self.wants_data = False

    def walk(self, jaxpr: Any, inputs: list[Any], out_rel: list[bool], times: float,
             depth: int, around: Any = None) -> KernelWork:
        if depth > MAX_DEPTH:
            raise Unreadable("the traced function nests more deeply than the counter reads")
        work = KernelWork()
        env = self.values.run(jaxpr, inputs, depth)
        rel = _relevance(jaxpr, out_rel, env, self.values, frozenset(), depth)
        for eqn in jaxpr.eqns:
            line = self.lines.get(id(eqn)) or around  # a nested equation: its caller's line
            live = id(eqn) in rel.eqns
            outs = [v in rel.vars for v in eqn.outvars]
            if compat.is_kernel(eqn):
                if not live or not any(outs):
                    continue  # nothing it makes reaches the result
                operands = [self.values.of(v, env) for v in eqn.invars]
                self.wants_data |= any(x is None and _dtype(v) is not None
                                       and _dtype(v).kind in "biu"
                                       for v, x in zip(eqn.invars, operands, strict=True))
                flops, moved, programs = _kernel(eqn, outs, operands)
                work.flops += times * flops
                work.bytes += times * moved
                work.kernels.append({"flops": times * flops, "bytes": times * moved,
                                     "programs": programs, "line": line})
                continue
            name = eqn.primitive.name
            if not _subs(eqn):
                flops = float(_outputs(eqn)) * 2.0 if name in _LOOKUPS else leaf_flops(eqn)
                work.outside_eqns.append((times * flops, name, line))
                continue
            if live:
                _merge(work, self.nested(eqn, env, outs, times, depth, line))
        return work

    def nested(self, eqn: Any, env: dict[Any, Any], outs: list[bool], times: float,
               depth: int, line: Any) -> KernelWork:
        name, of = eqn.primitive.name, self.values.of
        sub = _call_jaxpr(eqn)
        if sub is not None:
            return self.walk(sub, _shards(eqn, [of(v, env) for v in eqn.invars]), outs,
                             times * _per_device(eqn), depth + 1, line)
        if name == "scan":
            body = _jaxpr(eqn.params["jaxpr"])
            nc = compat.scan_counts(eqn)[0]
            length = float(eqn.params.get("length", 0))
            ins = [of(v, env) for v in eqn.invars[:nc]] + [None] * (len(body.invars) - nc)
            if length <= 0:
                return KernelWork()
            body_rel = _scan_operands(eqn, outs, env, self.values, frozenset(), depth)[1]
            return self.walk(body, ins, body_rel, times * length, depth + 1, line)
        if name == "cond":
            branches = [_jaxpr(b) for b in eqn.params["branches"]]
            ins = [of(v, env) for v in eqn.invars[1:]]
            index = _numbers(of(eqn.invars[0], env))
            if index is not None:
                _check_index(index, len(branches))
                return self.walk(branches[int(index)], ins, outs, times, depth + 1, line)
            options = [self.walk(b, ins, outs, times, depth + 1, line) for b in branches]
            return _cheapest(options)
        if name == "while":
            trips = _trips(eqn, env, self.values)
            if trips is None or float(trips) <= 0:
                return KernelWork()  # not proven to run: its kernels count nothing
            cn, bn = int(eqn.params["cond_nconsts"]), int(eqn.params["body_nconsts"])
            body = _jaxpr(eqn.params["body_jaxpr"])
            ins = [of(v, env) for v in eqn.invars[cn:cn + bn]] + [None] * (len(body.invars) - bn)
            body_rel = _while_operands(eqn, outs, env, self.values, frozenset(), depth)[1]
            return self.walk(body, ins, body_rel, times * float(trips), depth + 1, line)
        if any(compat.is_kernel(e) for s in _subs(eqn) for e in compat.walk_eqns(s, 100_000)):
            raise Unreadable(f"a kernel inside {name}, which the kernel-work counter does not "
                             "read")
        return KernelWork()  # no kernel inside: nothing of the kernels' work


def _merge(work: KernelWork, more: KernelWork) -> None:
    work.flops += more.flops
    work.bytes += more.bytes
    work.kernels += more.kernels
    work.outside_eqns += more.outside_eqns


def _cheapest(options: list[KernelWork]) -> KernelWork:
    """Of a branch's alternatives, the least kernel work (each figure's least)."""
    if not options:
        return KernelWork()
    best = min(options, key=lambda w: (w.flops, w.bytes))
    return KernelWork(flops=best.flops, bytes=min(w.bytes for w in options),
                      kernels=list(best.kernels),
                      outside_eqns=[e for w in options for e in w.outside_eqns])


MAX_HOST_ELEMENTS = 1 << 26  # the largest value the host computes on a trial's data
# What the host computes on a trial's data in all, in the counter's own prices: the kernel file
# wrote these programs, so they are bounded (a loop is never run: its trips are the data's).
HOST_FLOPS = 4e9
HOST_ELEMENTS = 1 << 28
_UNBOUNDED = frozenset({"while"})


def _holds_kernel(eqn: Any) -> bool:
    return compat.is_kernel(eqn) or any(compat.is_kernel(e) for s in _subs(eqn)
                                        for e in compat.walk_eqns(s, 100_000))


def _host_values(jaxpr: Any, raw: list[Any], floats: bool = False,
                 fused: bool = False) -> dict[Any, Any]:
    """The integer operands of the kernels in ``jaxpr`` (at any depth of calls), computed from
    a trial's inputs and constants: the tile metadata a library derives from group sizes,
    lengths, offsets, sorted ids. Only what they depend on is computed (never a kernel: its
    result is unknown), each value at most :data:`MAX_HOST_ELEMENTS`, and without ``floats``
    only equations on integers and booleans (exact wherever they run): where a chip runs the
    trial a float computed here does not decide, since the chip may round otherwise (a
    float32 matmul compared with its highest-precision copy is equal on the host's CPU; a
    TPU's default matmul precision is lower). With ``floats`` the floats are computed too:
    equation by equation on the host's CPU (interpret mode, where the trial runs there), or
    with ``fused`` as one XLA program on the device that holds ``raw`` (device mode: the
    first trial's inputs on the chip, :func:`_fused_values`). What is not computed stays
    unknown. Returns var -> value, nested calls' vars included."""
    if floats and fused:
        return _fused_values(jaxpr, raw)
    found: dict[Any, Any] = {}
    _evaluate(jaxpr, raw, found, {}, _budget(), floats=floats)
    return found


def _budget() -> dict[str, float]:
    return {"flops": HOST_FLOPS, "elements": float(HOST_ELEMENTS)}


def _fused_values(jaxpr: Any, raw: list[Any]) -> dict[Any, Any]:
    """What :func:`_evaluate` computes with floats deciding, traced into one jitted program
    and run on the device that holds ``raw`` (the chip's arrays on a chip; numpy arrays run on
    the host's CPU), so XLA fuses and rounds it as it does the trial's program; the integer
    values come back to the host. Raises where that program fails to compile or run (the
    caller cannot know)."""
    import jax

    order: list[Any] = []

    def program(*given: Any) -> list[Any]:
        found: dict[Any, Any] = {}
        _evaluate(jaxpr, list(given), found, {}, _budget(), floats=True, traced=True)
        order[:] = list(found)
        return [found[v] for v in order]

    on = next((x.devices().pop() for x in raw if isinstance(x, jax.Array)),
              jax.devices("cpu")[0])
    with jax.default_device(on):
        outs = jax.jit(program)(*raw)
    return {v: np.asarray(x) for v, x in zip(order, outs, strict=True)}


def _host_cost(eqn: Any, depth: int = 0) -> tuple[float, float] | None:
    """(FLOPs, elements) of running ``eqn`` on the host, in the counter's prices; None for one
    that must not run there: a ``while`` (its trips are the data's: a kernel file's loop may
    never end) or a call holding one. A ``scan`` runs its static ``length`` times its body's
    cost (a library's binary search over a small table of group offsets)."""
    if eqn.primitive.name in _UNBOUNDED or depth > MAX_DEPTH:
        return None
    flops = 0.0 if _subs(eqn) else leaf_flops(eqn)
    elements = float(sum(_size(v.aval) for v in [*eqn.invars, *eqn.outvars]
                         if not _is_literal(v)))
    times = float(eqn.params.get("length", 1)) if eqn.primitive.name == "scan" else 1.0
    for sub in _subs(eqn):
        for inner in sub.eqns:
            cost = _host_cost(inner, depth + 1)
            if cost is None:
                return None
            flops, elements = flops + times * cost[0], elements + times * cost[1]
    return flops, elements


def _is_int(v: Any) -> bool:
    return not _is_literal(v) and _dtype(v) is not None and _dtype(v).kind in "biu"


def _integral(v: Any) -> bool:
    """An integer or boolean var or literal (a float's value never decides a count)."""
    return _dtype(v) is not None and _dtype(v).kind in "biu"


def _needed(jaxpr: Any, needs: dict[int, set[Any]], depth: int = 0) -> set[Any]:
    """The vars of ``jaxpr`` the integer operands of its kernels depend on (its inputs
    included), through calls; cached by jaxpr in ``needs``."""
    if id(jaxpr) in needs:
        return needs[id(jaxpr)]
    if depth > MAX_DEPTH:
        raise Unreadable("the traced function nests more deeply than the counter reads")
    wanted: set[Any] = set()
    for eqn in jaxpr.eqns:
        if not _holds_kernel(eqn):
            continue
        sub = None if compat.is_kernel(eqn) else _call_jaxpr(eqn)
        if sub is not None and _per_device(eqn) == 1:
            inner = _needed(sub, needs, depth + 1)
            wanted |= {u for u, v in zip(eqn.invars, sub.invars, strict=True)
                       if v in inner and not _is_literal(u)}
        else:
            wanted |= {v for v in eqn.invars if _is_int(v)}
    maker = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    need: set[Any] = set()
    stack = list(wanted)
    while stack:
        v = stack.pop()
        eqn = maker.get(v)
        if v in need or (eqn is not None and (_holds_kernel(eqn) or eqn.effects)):
            continue
        need.add(v)
        if eqn is not None:
            stack += [u for u in eqn.invars if not _is_literal(u)]
    needs[id(jaxpr)] = need
    return need


def _call_consts(eqn: Any) -> list[Any]:
    """The constants of a call-like equation's closed jaxpr (what its constvars hold)."""
    name = _CALLS.get(eqn.primitive.name)
    return list(getattr(eqn.params.get(name), "consts", ()) or ()) if name else []


def _evaluate(jaxpr: Any, raw: list[Any], found: dict[Any, Any], needs: dict[int, set[Any]],
              budget: dict[str, float], depth: int = 0, consts: list[Any] = (),
              floats: bool = False, traced: bool = False) -> None:
    """Computes into ``found`` what :func:`_host_values` says, equation by equation on the
    host's CPU, or with ``traced`` binding them on a jitted program's tracers."""
    import jax

    def array(x: Any) -> Any:
        return x if traced else np.asarray(x)

    need = _needed(jaxpr, needs, depth)
    if not need:
        return

    def decides(v: Any) -> bool:  # a float decides only where the host runs the trial
        return floats or _integral(v)

    env = {v: array(x) for v, x in zip(jaxpr.invars, raw, strict=False)
           if x is not None and v in need and decides(v)}
    if len(consts) == len(jaxpr.constvars):
        env.update({v: array(c) for v, c in zip(jaxpr.constvars, consts, strict=True)
                    if v in need and decides(v) and np.size(c) <= MAX_HOST_ELEMENTS})
    cpu = jax.devices("cpu")[0]
    for eqn in jaxpr.eqns:
        known = [not _is_literal(u) and u in env for u in eqn.invars]
        if _holds_kernel(eqn):
            sub = None if compat.is_kernel(eqn) else _call_jaxpr(eqn)
            if sub is not None and _per_device(eqn) == 1:
                _evaluate(sub, [env[u] if k else (u.val if _is_literal(u) else None)
                                for u, k in zip(eqn.invars, known, strict=True)],
                          found, needs, budget, depth + 1, _call_consts(eqn), floats, traced)
            continue
        if not any(v in need for v in eqn.outvars) or not all(
                k or _is_literal(u) for u, k in zip(eqn.invars, known, strict=True)) or any(
                _size(v.aval) > MAX_HOST_ELEMENTS or not decides(v)
                for v in [*eqn.invars, *eqn.outvars]):
            continue  # unknown inputs, too large, or a float where floats do not decide
        cost = _host_cost(eqn)
        if cost is None or cost[0] > budget["flops"] or cost[1] > budget["elements"]:
            continue  # never run (a loop) or over what the host spends: unknown
        budget["flops"] -= cost[0]
        budget["elements"] -= cost[1]
        try:
            with contextlib.nullcontext() if traced else jax.default_device(cpu):
                outs = compat.bind_eqn(eqn, [u.val if _is_literal(u) else env[u]
                                             for u in eqn.invars])
        except Exception:  # noqa: BLE001 - not computed: unknown
            continue
        env.update({v: array(o) for v, o in zip(eqn.outvars, outs, strict=True)})
    found.update({v: x for v, x in env.items() if _is_int(v)})


def count(closed: Any, lines: dict[int, tuple[str, int]] | None = None,
          known: list[Any] | None = None, floats: bool = False,
          fused: bool = False) -> KernelWork:
    """The kernels' work in ``closed`` (a traced kernel), with ``lines`` (``id(eqn) -> (file,
    line)``, the hand-over's) naming the outside equations. ``known``: a trial's inputs, in
    order (None for one not known): the small integer and boolean ones are read (page tables,
    lengths), and the integer operands of the kernels are computed from them on the host
    (:func:`_host_values`: integer work only, unless ``floats``: the trial runs on this
    host, so floats decide as they do there; with ``fused`` as one program where ``known``
    lives: the chip's first trial inputs in device mode), so that the loops,
    branches and grids that follow them count as they run on that data. The result's
    ``wants_data`` says whether a kernel had an integer operand the count did not know
    (counted without data: counting on a trial's may count more). Raises where it cannot read
    the jaxpr
    (:class:`Unreadable` and any other error): the caller fails closed."""
    jaxpr = _jaxpr(closed)
    raw = (list(known or []) + [None] * len(jaxpr.invars))[:len(jaxpr.invars)]
    given = [None if x is None else _known_const(x) for x in raw]
    raw_consts = list(getattr(closed, "consts", ()))
    consts = [_known_const(c) for c in raw_consts]
    if consts and len(consts) == len(jaxpr.constvars):  # the constants, as known inputs
        inputs = consts + given
        raw = raw_consts + raw
        jaxpr = jaxpr.replace(invars=[*jaxpr.constvars, *jaxpr.invars], constvars=[])
    else:
        inputs = given
    walker = _Module(lines or {})
    if known is not None:  # what the kernels' integer operands are on this data
        walker.values.preset = {v: _known_const(x)
                                for v, x in _host_values(jaxpr, raw, floats, fused).items()}
    work = walker.walk(jaxpr, inputs, [True] * len(jaxpr.outvars), 1.0, 0)
    work.wants_data = walker.wants_data
    work.outside_eqns.sort(key=lambda e: -e[0])
    del work.outside_eqns[8:]
    work.unreached = outputs_without_kernel(closed, lines)
    return work


# -- the data flow from kernels to outputs -------------------------------------------------------
@dataclass(frozen=True)
class _Through:
    """What made a kernel's aliased output that its body does not surely write: what made the
    input it aliases (an equation, or words), passed through."""

    source: Any


_THROUGH = "passed through the aliased output of a kernel that does not surely write it"


def outputs_without_kernel(closed: Any, lines: dict[int, tuple[str, int]] | None = None
                           ) -> list[tuple[int, str, Any]]:
    """The outputs of ``closed`` that no kernel's result reaches: (output index, what made it,
    (file, line) or None). A value comes from a kernel when a kernel equation wrote it, or an
    operand of the equation that made it did, through calls, loops and branches; a value the
    judge knows (a product with a constant zero, ``x - x``, a constant) comes from nothing,
    and a select or ``cond`` by a known predicate from the case it picks. A kernel output
    aliased to an input (``input_output_aliases``) that the body does not surely write in
    full (a grid of no program, a body that never stores to it, or stores to part of it) is
    that input passed through: it comes from a kernel only where the input does."""
    lines = lines or {}
    jaxpr = _jaxpr(closed)
    values = Values()
    flags, made = _reached(jaxpr, [False] * len(jaxpr.invars), [None] * len(jaxpr.invars),
                           values, 0)
    missing = []
    for i, (v, ok) in enumerate(zip(jaxpr.outvars, flags, strict=True)):
        if ok:
            continue
        maker = None if _is_literal(v) else made.get(v)
        through = isinstance(maker, _Through)
        if through:
            maker = maker.source
        if maker is None or isinstance(maker, str):
            what = maker or ("an input passed through" if v in jaxpr.invars else "a constant")
            line = None
        else:
            what, line = maker.primitive.name, lines.get(id(maker))
        missing.append((i, f"{what} ({_THROUGH})" if through else what, line))
    return missing


def _reached(jaxpr: Any, flags: list[bool], inputs: list[Any], values: Values,
             depth: int) -> tuple[list[bool], dict[Any, Any]]:
    """Per output of ``jaxpr``, whether a kernel result reaches it; and the equation that made
    each value."""
    if depth > MAX_DEPTH:
        raise Unreadable("the traced function nests more deeply than the data-flow rule reads")
    env = values.run(jaxpr, inputs, depth)
    seen = {v: f for v, f in zip(jaxpr.invars, flags, strict=False)}
    made: dict[Any, Any] = {}

    def flag(v: Any) -> bool:
        return not _is_literal(v) and v not in env and bool(seen.get(v, False))

    for eqn in jaxpr.eqns:
        ins = [flag(v) for v in eqn.invars]
        through = _unwritten_aliases(eqn, [values.of(v, env) for v in eqn.invars]) \
            if compat.is_kernel(eqn) else {}
        outs = _eqn_reached(eqn, ins, env, values, depth, through)
        for j, (v, f) in enumerate(zip(eqn.outvars, outs, strict=False)):
            seen[v] = f and v not in env
            made[v] = _Through(_maker(eqn.invars[through[j]], made, jaxpr)) if j in through \
                else eqn
    return [flag(v) for v in jaxpr.outvars], made


def _maker(v: Any, made: dict[Any, Any], jaxpr: Any) -> Any:
    """What made ``v`` (an equation, or words), through kernels' pass-through aliases."""
    if _is_literal(v):
        return "a constant"
    maker = made.get(v)
    if isinstance(maker, _Through):
        return maker.source
    if maker is None:
        return "an input" if v in jaxpr.invars else "a constant"
    return maker


def _eqn_reached(eqn: Any, ins: list[bool], env: dict[Any, Any], values: Values,
                 depth: int, through: dict[int, int] | None = None) -> list[bool]:
    name, of = eqn.primitive.name, values.of
    n_out = len(eqn.outvars)
    if compat.is_kernel(eqn):  # its outputs, but an aliased input it passes through unwritten
        through = through or {}
        return [ins[through[j]] if j in through else True for j in range(n_out)]
    sub = _call_jaxpr(eqn)
    if sub is not None:
        return _reached(sub, ins, _shards(eqn, [of(v, env) for v in eqn.invars]), values,
                        depth + 1)[0]
    if name == "select_n":
        which = of(eqn.invars[0], env)
        if isinstance(which, np.ndarray) and which.ndim == 0:
            return [ins[1 + int(np.clip(int(which), 0, len(ins) - 2))]]
        return [any(ins)]
    if name == "cond":
        branches = [_jaxpr(b) for b in eqn.params["branches"]]
        index = _numbers(of(eqn.invars[0], env))
        if index is not None:
            _check_index(index, len(branches))
        taken = _taken(index, len(branches))
        inputs = [of(v, env) for v in eqn.invars[1:]]
        out = [ins[0]] * n_out  # an index from a kernel picks among the branches
        for b, branch in enumerate(branches):
            if taken is None or b in taken:
                got = _reached(branch, ins[1:], inputs, values, depth + 1)[0]
                out = [o or g for o, g in zip(out, got, strict=True)]
        return out
    if name == "scan":
        body = _jaxpr(eqn.params["jaxpr"])
        nc, ncar = compat.scan_counts(eqn)
        start = list(ins[nc:nc + ncar])
        if int(eqn.params.get("length", 0)) <= 0:
            return start + [False] * (n_out - ncar)
        carry = start  # what a step may start from: the first carry or a step's result
        inputs = [of(v, env) for v in eqn.invars[:nc]] + [None] * (len(body.invars) - nc)
        for _ in range(ncar + 1):
            got = _reached(body, ins[:nc] + carry + ins[nc + ncar:], inputs, values,
                           depth + 1)[0]
            grown = [s or g for s, g in zip(start, got[:ncar], strict=True)]
            if grown == carry:
                break
            carry = grown
        return got  # the last step's carry and every step's outputs
    if name == "while":
        cn, bn = int(eqn.params["cond_nconsts"]), int(eqn.params["body_nconsts"])
        body = _jaxpr(eqn.params["body_jaxpr"])
        carry = list(ins[cn + bn:])
        inputs = [of(v, env) for v in eqn.invars[cn:cn + bn]] + [None] * len(carry)
        for _ in range(len(carry) + 1):
            got = _reached(body, ins[cn:cn + bn] + carry, inputs, values, depth + 1)[0]
            grown = [c or g for c, g in zip(carry, got, strict=True)]
            if grown == carry:
                break
            carry = grown
        return carry
    subs = _subs(eqn)
    inside = bool(subs) and any(compat.is_kernel(e) for s in subs
                                for e in compat.walk_eqns(s, 100_000))
    return [any(ins) or inside] * n_out
