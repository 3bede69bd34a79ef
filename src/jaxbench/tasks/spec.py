"""The task format: what one operator to optimize is, as Python data.

A task module (``tasks/<suite>/<folder>/task.py``) builds one :class:`Task` and
binds it to the module-level name ``TASK``. Its seed and expert kernels live
beside it as ``seed_tpu.py``, ``seed_gpu.py``, ``expert_tpu.py`` ... : plain
candidate files, evaluated exactly like any submitted kernel.

Sizes are named sets of dimensions (``small`` for CPU interpret-mode checks,
``full`` for timing); input specs, FLOPs and bytes are functions of those
dimensions, so one definition serves every size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

SIZES = ("small", "full")
TARGETS = ("tpu", "gpu")
DEFAULT_ATOL = 1e-2
DEFAULT_RTOL = 1e-2


# Inputs of more elements than this are drawn a block of leading rows at a time, one key per
# row (draw_blocked), so that drawing needs scratch memory for about this many elements
# rather than for the whole array: JAX's classic threefry, which the drawing uses
# (Task.drawing), materializes an array's random bits, and 5p_flex_attention's full-size
# drawing needed 8 GiB of scratch beside its 2.75 GiB of inputs on a TPU v5e, so that its
# evaluation ran out of the chip's memory.
DRAW_BLOCK = 1 << 24


def draw_blocked(draw: Callable[[jax.Array, tuple[int, ...]], jax.Array], key: jax.Array,
                 shape: tuple[int, ...]) -> jax.Array:
    """``draw(key, shape)``, or for more than :data:`DRAW_BLOCK` elements (and at least two
    axes) ``shape[0]`` rows, each drawn (so, recursively) from its own key of
    ``jax.random.split(key, shape[0])``, as many rows at once as fit in a block and divide
    ``shape[0]`` (``lax.map``): the same values on every platform, the scratch of one block
    at a time. The rows at once divide the rows, as a remainder costs compile time: on a
    TPU v5e every full-size drawing whose blocks left one compiled in 7-133 s (8p_gemm's
    (8192, 28672) weight, 585 rows at once: 132 s), against 0.5-12 s for those without."""
    shape = tuple(int(d) for d in shape)
    if math.prod(shape) <= DRAW_BLOCK or len(shape) < 2:
        return draw(key, shape)
    row = shape[1:]
    fit = max(1, min(shape[0], DRAW_BLOCK // math.prod(row)))
    rows = next(n for n in range(fit, 0, -1) if shape[0] % n == 0)

    def one(k: jax.Array) -> jax.Array:
        return draw_blocked(draw, k, row)

    keys = jax.random.split(key, shape[0])
    return jax.lax.map(one, keys, batch_size=rows) if rows > 1 else jax.lax.map(one, keys)


@dataclass(frozen=True)
class InputSpec:
    """One positional input: its name, shape, dtype and how to draw it.

    ``init`` is one of ``normal`` (``scale * N(0, 1)``), ``uniform``
    (``U[low, high)``), ``randint`` (integers in ``[low, high)``) or
    ``custom`` (the task's ``make_inputs`` draws it).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "bfloat16"
    init: str = "normal"
    scale: float = 1.0
    low: float = 0.0
    high: float = 1.0

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(jnp.dtype(self.dtype)).itemsize

    def draw(self, key: jax.Array) -> jax.Array:
        """This input drawn from ``key``; one of more than :data:`DRAW_BLOCK` elements a
        block of leading rows at a time (:func:`draw_blocked`)."""
        if self.init not in ("normal", "uniform", "randint"):
            raise ValueError(f"input {self.name!r}: init {self.init!r} needs the task's "
                             "make_inputs")
        return draw_blocked(self._draw, key, self.shape)

    def _draw(self, key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
        dtype = jnp.dtype(self.dtype)
        if self.init == "normal":
            x = jax.random.normal(key, shape, jnp.float32) * self.scale
            return x.astype(dtype)
        if self.init == "uniform":
            x = jax.random.uniform(key, shape, jnp.float32, self.low, self.high)
            return x.astype(dtype)
        return jax.random.randint(key, shape, int(self.low), int(self.high), dtype)

    def describe(self) -> str:
        return f"{self.name}: {self.dtype}{list(self.shape)}"


def normal(name: str, shape: Sequence[int], scale: float = 1.0, dtype: str = "bfloat16") -> InputSpec:
    """An activation drawn from ``scale * N(0, 1)``."""
    return InputSpec(name, tuple(shape), dtype, "normal", scale=scale)


def weight(name: str, shape: Sequence[int], fan_in: int, dtype: str = "bfloat16") -> InputSpec:
    """A weight drawn from ``N(0, 1/fan_in)``: never zero, outputs stay O(1) at every size."""
    return InputSpec(name, tuple(shape), dtype, "normal", scale=1.0 / math.sqrt(fan_in))


def uniform(name: str, shape: Sequence[int], low: float = 0.0, high: float = 1.0,
            dtype: str = "bfloat16") -> InputSpec:
    return InputSpec(name, tuple(shape), dtype, "uniform", low=low, high=high)


def randint(name: str, shape: Sequence[int], low: int, high: int, dtype: str = "int32") -> InputSpec:
    return InputSpec(name, tuple(shape), dtype, "randint", low=low, high=high)


def custom(name: str, shape: Sequence[int], dtype: str = "int32") -> InputSpec:
    """An input the task's own ``make_inputs`` draws (page tables, group sizes ...)."""
    return InputSpec(name, tuple(shape), dtype, "custom")


Dims = SimpleNamespace


WORKS = ("flops", "bytes")


class Task:
    """One operator to optimize.

    Args:
        id: the catalogue ID, e.g. ``"8p_gemm"``.
        reference: the plain-JAX reference (the XLA baseline). It must be
            dtype-generic: called on float32-upcast inputs it computes the
            float32 ground truth.
        sizes: size name -> dimensions, e.g. ``{"small": dict(M=256), "full": dict(M=8192)}``.
        inputs: dimensions -> input specs, in call order.
        flops: dimensions -> floating-point operations of the operator.
        bytes: dimensions -> minimal HBM traffic; defaults to inputs + outputs.
        make_inputs: ``(key, dims) -> tuple`` for inputs that are not independent
            draws (page tables, sorted group sizes ...); default draws each spec.
        atol, rtol: the correctness tolerance, compared in float32.
        suite: the suite the task belongs to.
        meta: source model, family, level, catalogue ``number`` (orders the suite), and
            ``repair`` (what was changed from a published version) for repaired tasks.
        unrepaired_reference: for a repaired task whose math changed, the published
            version's reference, kept for the record (never used to judge).
        description: what the task computes (defaults to the module docstring).
        work: the task's currency: ``"flops"`` (compute; the default) or ``"bytes"`` (its work
            is data movement: a gather, transpose, pad or concatenate). The outside-work rule
            counts XLA's share in that currency; the validator checks the choice against what
            XLA's optimised reference computes.
        batch: a dimension along which the reference is independent (each element's outputs
            depend only on that element's inputs, as attention's batch is): where the float32
            truth does not fit the chip whole, the judge computes it in slices along it
            (:meth:`batch_axes` finds each array's axis; a test checks the independence).
    """

    def __init__(
        self,
        id: str,
        *,
        reference: Callable[..., Any],
        sizes: Mapping[str, Mapping[str, int]],
        inputs: Callable[[Dims], Sequence[InputSpec]],
        flops: Callable[[Dims], float],
        bytes: Callable[[Dims], float] | None = None,
        make_inputs: Callable[[jax.Array, Dims], tuple] | None = None,
        atol: float = DEFAULT_ATOL,
        rtol: float = DEFAULT_RTOL,
        suite: str = "jaxbench",
        meta: Mapping[str, Any] | None = None,
        unrepaired_reference: Callable[..., Any] | None = None,
        description: str = "",
        work: str = "flops",
        batch: str | None = None,
    ) -> None:
        missing = [s for s in SIZES if s not in sizes]
        if missing:
            raise ValueError(f"task {id}: sizes {missing} are missing")
        self.id = id
        self.reference = reference
        self.sizes = {k: dict(v) for k, v in sizes.items()}
        self._inputs = inputs
        self._flops = flops
        if work not in WORKS:
            raise ValueError(f"task {id}: work must be one of {WORKS}, not {work!r}")
        self.work = work
        if batch is not None and any(batch not in dims for dims in sizes.values()):
            raise ValueError(f"task {id}: batch {batch!r} is not a dimension of every size")
        self.batch = batch
        self._bytes = bytes
        self._make_inputs = make_inputs
        self.atol = atol
        self.rtol = rtol
        self.suite = suite
        self.meta = dict(meta or {})
        self.unrepaired_reference = unrepaired_reference
        self.description = description
        self.folder: Path | None = None  # set by the registry
        self._draw_jit: dict[Any, Callable[[jax.Array], tuple]] = {}

    def __repr__(self) -> str:
        return f"Task({self.id!r})"

    def dims(self, size: str = "small") -> Dims:
        if size not in self.sizes:
            raise KeyError(f"task {self.id} has no size {size!r} (sizes: {', '.join(self.sizes)})")
        return Dims(**self.sizes[size])

    def input_specs(self, size: str = "small") -> list[InputSpec]:
        return list(self._inputs(self.dims(size)))

    @property
    def inputs(self) -> dict[str, list[InputSpec]]:
        """Input specs per size, in call order."""
        return {size: self.input_specs(size) for size in self.sizes}

    def make_inputs(self, key: jax.Array, size: str = "small") -> tuple:
        """Draws the input tuple for ``size`` from a PRNG key (same key, same inputs)."""
        return self.drawing(size)(key)

    def drawing(self, size: str = "small") -> Callable[[jax.Array], tuple]:
        """The jitted program that draws ``size``'s inputs from a key (one per size)."""
        if size not in self._draw_jit:  # one compiled program per size, not one per op
            draw = self.drawing_fn(size)

            def classic(k: jax.Array) -> tuple:
                # JAX's classic threefry bits rather than its partitionable ones (the default
                # since JAX 0.5): as random, the same integer inputs from a key on the CPU and
                # on a chip (floats may round otherwise there, with either), and on a TPU v5e
                # the program compiles in a fraction of the time at full size (12p_rmsnorm:
                # 4.1-4.9 s against 17.8-18.7 s; benchmarks/drawing_compile.py)
                with jax.threefry_partitionable(False):
                    return draw(k)

            self._draw_jit[size] = jax.jit(classic)
        return self._draw_jit[size]

    def drawing_fn(self, size: str = "small") -> Callable[[jax.Array], tuple]:
        """``size``'s drawing as a plain function of a key, under whatever threefry variant
        is in force (:meth:`drawing` jits it under the classic one)."""
        specs, dims, custom_draw = self.input_specs(size), self.dims(size), self._make_inputs

        def draw(k: jax.Array) -> tuple:
            if custom_draw is not None:
                return tuple(custom_draw(k, dims))
            keys = jax.random.split(k, len(specs))
            return tuple(spec.draw(kk) for spec, kk in zip(specs, keys, strict=True))

        return draw

    def drawing_of(self, size: str, indices: tuple[int, ...]) -> Callable[[jax.Array], tuple]:
        """The program that draws only the inputs at ``indices`` of ``size``: the same values
        as :meth:`drawing`'s from the same key (the same program, its other outputs left out,
        so XLA does none of their work and holds none of their memory)."""
        if (size, indices) not in self._draw_jit:
            whole = self.drawing(size)

            def draw(k: jax.Array) -> tuple:
                drawn = whole(k)
                return tuple(drawn[i] for i in indices)

            self._draw_jit[(size, indices)] = jax.jit(draw)
        return self._draw_jit[(size, indices)]

    def output_shapes(self, size: str = "small") -> Any:
        """The reference's output ``ShapeDtypeStruct`` pytree (no computation)."""
        specs = [jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype)) for s in self.input_specs(size)]
        return jax.eval_shape(self.reference, *specs)

    def shapes_at(self, dims: Mapping[str, int]) -> tuple[list[InputSpec], list[Any]]:
        """Input specs and output shapes at any dimensions (not only a named size)."""
        specs = list(self._inputs(Dims(**dims)))
        outs = jax.eval_shape(self.reference, *[jax.ShapeDtypeStruct(s.shape, jnp.dtype(s.dtype))
                                                 for s in specs])
        return specs, jax.tree_util.tree_leaves(outs)

    def batch_axes(self, size: str) -> tuple[list[int | None], list[int]] | None:
        """Each input's and output's axis along :attr:`batch` at ``size`` (None for an input
        without one, shared by every element), found by growing the batch by one; None when
        the task declares no batch. ValueError when an array's batch axis is ambiguous."""
        if self.batch is None:
            return None
        dims = self.sizes[size]
        grown = {**dims, self.batch: dims[self.batch] + 1}
        axes: list[list[int | None]] = []
        for a, b in zip(self.shapes_at(dims), self.shapes_at(grown), strict=True):
            found = []
            for x, y in zip(a, b, strict=True):
                changed = [i for i, (m, n) in enumerate(zip(x.shape, y.shape, strict=True)) if m != n]
                if len(changed) > 1 or (changed and x.shape[changed[0]] != dims[self.batch]):
                    raise ValueError(f"task {self.id}: an array's batch axis is ambiguous")
                found.append(changed[0] if changed else None)
            axes.append(found)
        if any(axis is None for axis in axes[1]):
            raise ValueError(f"task {self.id}: an output has no batch axis")
        return axes[0], [int(a) for a in axes[1] if a is not None]

    def flops(self, size: str = "small") -> float:
        return float(self._flops(self.dims(size)))

    def bytes(self, size: str = "small") -> float:
        if self._bytes is not None:
            return float(self._bytes(self.dims(size)))
        outs = jax.tree_util.tree_leaves(self.output_shapes(size))
        out_bytes = sum(math.prod(o.shape) * o.dtype.itemsize for o in outs)
        return float(sum(s.nbytes for s in self.input_specs(size)) + out_bytes)

    def kernel_files(self) -> dict[tuple[str, str], Path]:
        """Shipped kernels beside the task: ``(kind, target) -> path``, e.g. ``("seed", "tpu")``
        or ``("seed_mosaic", "gpu")`` (a second seed of another backend)."""
        if self.folder is None:
            return {}
        found = {}
        for path in sorted(self.folder.glob("*_*.py")):
            kind, _, target = path.stem.rpartition("_")
            if kind in ("seed", "expert") or kind.startswith(("expert", "seed_")):
                if target in TARGETS:
                    found[(kind, target)] = path
        return found

    def prompt_signature(self, size: str = "full") -> str:
        """Inputs in call order, one per line, for prompts and listings."""
        return "\n".join(s.describe() for s in self.input_specs(size))



def upcast(inputs: Sequence[Any]) -> tuple:
    """Floating inputs to float32, others unchanged: the ground truth's inputs."""
    out = []
    for x in inputs:
        if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating):
            out.append(jnp.asarray(x, jnp.float32))
        else:
            out.append(x)
    return tuple(out)


def float32_reference(task: Task) -> Callable[..., Any]:
    """The ground truth's function: ``task``'s reference on its inputs upcast to float32, as
    one jitted program (the upcast inside it, so no program is compiled per input shape)."""
    reference = task.reference
    return jax.jit(lambda *xs: reference(*upcast(xs)))


__all__ = [
    "DEFAULT_ATOL", "DEFAULT_RTOL", "Dims", "InputSpec", "SIZES", "TARGETS", "Task",
    "custom", "float32_reference", "normal", "randint", "uniform", "upcast", "weight",
]
