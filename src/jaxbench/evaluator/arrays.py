"""Output arrays between processes: one ``.npy`` stream plus a JSON layout.

``pack`` runs in the process that computed the outputs; ``unpack`` runs in the
parent and trusts nothing: no pickles, every array's dtype and shape must be
the ones the layout declares, the stream must hold exactly the arrays declared,
and a size cap bounds what is read.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

import numpy as np

MAX_BYTES = 4 << 30


class MalformedOutputs(ValueError):
    """The stream does not match its layout (a forged or truncated file)."""


def pack(runs: Iterable[tuple[str, Any, Any]]) -> tuple[bytes, list[dict[str, Any]]]:
    """(label, key, outputs pytree) triples -> (npy stream, layout)."""
    import jax

    buffer = io.BytesIO()
    layout = []
    for label, key, outputs in runs:
        leaves = []
        for leaf in jax.tree_util.tree_leaves(outputs):
            arr = np.asarray(leaf)
            dtype = str(arr.dtype)
            if arr.dtype.kind == "V":  # ml_dtypes (bfloat16, float8): ship the raw bits
                arr = arr.view(f"u{arr.dtype.itemsize}")
            np.save(buffer, arr, allow_pickle=False)
            leaves.append({"shape": list(arr.shape), "dtype": dtype})
        layout.append({"label": label, "key": key, "leaves": leaves})
    return buffer.getvalue(), layout


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
                arr = np.load(stream, allow_pickle=False)
                dtype = jnp.dtype(str(leaf["dtype"]))
                if arr.dtype != dtype:
                    if arr.dtype.kind != "u" or arr.dtype.itemsize != dtype.itemsize:
                        raise MalformedOutputs(f"array stored as {arr.dtype}, declared {dtype}")
                    arr = arr.view(dtype)
                if list(arr.shape) != [int(d) for d in leaf["shape"]]:
                    raise MalformedOutputs("array shape differs from its declared shape")
                leaves.append(arr)
            outputs[str(run["label"])] = leaves
    except (KeyError, TypeError, ValueError, EOFError, OSError) as exc:
        if isinstance(exc, MalformedOutputs):
            raise
        raise MalformedOutputs(f"unreadable output stream: {type(exc).__name__}") from None
    if stream.read(1):
        raise MalformedOutputs("output stream holds more arrays than declared")
    return outputs
