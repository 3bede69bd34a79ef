"""Output arrays between processes: one ``.npy`` stream plus a JSON layout.

``pack`` runs in the process that computed the outputs; ``unpack`` runs in the
parent and trusts nothing: no pickles, every array's dtype and shape must be
the ones the layout declares, the stream must hold exactly the arrays declared,
and a size cap bounds what is read.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any, TypedDict

import numpy as np

MAX_BYTES = 4 << 30


class LeafLayout(TypedDict):
    """One array of a run's outputs as the stream declares it (the dtype as named before
    ml_dtypes' raw bits were shipped)."""

    shape: list[int]
    dtype: str


class RunLayout(TypedDict):
    """One run's outputs in the stream: its label, its key, its arrays in order."""

    label: str
    key: Any
    leaves: list[LeafLayout]


class MalformedOutputs(ValueError):
    """The stream does not match its layout (a forged or truncated file)."""


def pack(runs: Iterable[tuple[str, Any, Any]]) -> tuple[bytes, list[RunLayout]]:
    """(label, key, outputs pytree) triples -> (npy stream, layout)."""
    import jax

    buffer = io.BytesIO()
    layout: list[RunLayout] = []
    for label, key, outputs in runs:
        leaves: list[LeafLayout] = []
        for leaf in jax.tree_util.tree_leaves(outputs):
            arr = np.asarray(leaf)
            dtype = str(arr.dtype)
            if arr.dtype.kind == "V":  # ml_dtypes (bfloat16, float8): ship the raw bits
                arr = arr.view(f"u{arr.dtype.itemsize}")
            np.save(buffer, arr, allow_pickle=False)
            leaves.append({"shape": list(arr.shape), "dtype": dtype})
        layout.append({"label": label, "key": key, "leaves": leaves})
    return buffer.getvalue(), layout


def _read_array(stream: io.BytesIO, size: int, dtype: Any, shape: list[int]) -> np.ndarray:
    """One ``.npy`` array from ``stream`` (``size`` bytes in all), its header checked against
    the declared dtype and shape and against the bytes left before anything is allocated: a
    header claiming terabytes is refused here, not by the allocator."""
    from numpy.lib import format as npy

    version = npy.read_magic(stream)
    if version == (1, 0):
        header = npy.read_array_header_1_0(stream, max_header_size=10_000)
    elif version in ((2, 0), (3, 0)):
        header = npy.read_array_header_2_0(stream, max_header_size=10_000)
    else:
        raise MalformedOutputs(f"unknown .npy version {version}")
    stored_shape, fortran, stored = header
    if stored.hasobject or fortran:
        raise MalformedOutputs("objects or Fortran order in the output stream")
    if list(stored_shape) != shape:
        raise MalformedOutputs("array shape differs from its declared shape")
    if stored != dtype and (stored.kind != "u" or stored.itemsize != dtype.itemsize):
        raise MalformedOutputs(f"array stored as {stored}, declared {dtype}")
    count = 1
    for dim in shape:
        count *= dim
    nbytes = count * stored.itemsize
    start = stream.tell()
    if nbytes > size - start:
        raise MalformedOutputs("array header claims more bytes than the stream holds")
    arr = np.frombuffer(stream.getbuffer()[start:start + nbytes], dtype=stored).reshape(shape)
    stream.seek(start + nbytes)
    return arr.copy() if stored == dtype else arr.view(dtype).copy()


def unpack(data: bytes, layout: Any, max_bytes: int = MAX_BYTES) -> dict[str, list[np.ndarray]]:
    """label -> output arrays, validated against the layout; raises MalformedOutputs.
    ``max_bytes`` caps the stream (callers that know the expected outputs pass their size)."""
    import jax.numpy as jnp
    import ml_dtypes  # noqa: F401 - registers bfloat16 & co. with numpy

    if len(data) > max_bytes or not isinstance(layout, list):
        raise MalformedOutputs("output stream too large or layout not a list")
    stream = io.BytesIO(data)
    outputs: dict[str, list[np.ndarray]] = {}
    try:
        for run in layout:
            leaves = []
            for leaf in run["leaves"]:
                shape = [int(d) for d in leaf["shape"]]
                if len(shape) > 32 or any(d < 0 for d in shape):
                    raise MalformedOutputs("declared shape out of range")
                leaves.append(_read_array(stream, len(data), jnp.dtype(str(leaf["dtype"])),
                                          shape))
            outputs[str(run["label"])] = leaves
    except (KeyError, TypeError, ValueError, EOFError, OSError, MemoryError,
            OverflowError) as exc:
        if isinstance(exc, MalformedOutputs):
            raise
        raise MalformedOutputs(f"unreadable output stream: {type(exc).__name__}") from None
    if stream.read(1):
        raise MalformedOutputs("output stream holds more arrays than declared")
    return outputs
