"""A trial's comparison where its outputs are: on the chip, in the device owner.

At full size a trial's outputs and their float32 truth are hundreds of megabytes each; sending
them to the parent (to the host, into a stream, through a file, read back, compared there)
took most of a device evaluation's wall on the first TPU v5e run (docs/measurements.md). The
owner computes them on the chip already, so it computes the figures there too, with the
parent's formula (``|out - truth| <= atol + rtol * |truth|`` elementwise in float32, the worst
element's error over its tolerance, the largest absolute error and the relative L2 error), and
sends the figures instead of the arrays.

Only a clear pass is decided here: outputs of the expected shapes and dtypes, all finite, every
element within :data:`MARGIN` of its tolerance. Anything else (a mismatch, a NaN, an element
near its bound, where the chip's float32 rounding could differ from the host's) returns None,
and the arrays go to the parent to be compared and described as before (its messages name
where and by how much). So this can only save work, never change a verdict.
"""

from __future__ import annotations

import math
from typing import Any

# a clear pass: every element within 99 % of its tolerance (the parent reads the same bound)
from jaxbench.contract.records import CLEAR_PASS_MARGIN as MARGIN


def _figures(got: Any, ref: Any, atol: float, rtol: float) -> Any:
    import jax.numpy as jnp

    got = got.astype(jnp.float32)
    ref = ref.astype(jnp.float32)
    diff = got - ref
    err = jnp.abs(diff)
    tol = atol + rtol * jnp.abs(ref)
    fraction = jnp.where(tol > 0, err / jnp.where(tol > 0, tol, 1.0),
                         jnp.where(err > 0, jnp.inf, 0.0))
    return (jnp.all(jnp.isfinite(got)), jnp.max(err, initial=0.0),
            jnp.sqrt(jnp.sum(diff * diff)), jnp.sqrt(jnp.sum(ref * ref)),
            jnp.max(fraction, initial=0.0))


_FIGURES: dict[tuple[float, float], Any] = {}


def prepare(expected: list[Any], atol: float, rtol: float) -> dict[tuple[Any, ...], Any]:
    """The comparison compiled ahead for each output's (shape, dtype) against a float32 truth,
    before the chip is held: compiling it on first use cost ~0.9 s of chip time per
    evaluation on a TPU v5e (docs/measurements.md). Keyed as :func:`clear_pass` looks it up;
    a type it cannot compile is left out (compiled on use)."""
    import jax
    import jax.numpy as jnp

    fn = jax.jit(lambda got, ref: _figures(got, ref, atol, rtol))
    ready: dict[tuple[Any, ...], Any] = {}
    for shape, dtype in expected:
        key = (tuple(shape), jnp.dtype(dtype).name, "float32")
        if key in ready:
            continue
        try:
            ready[key] = fn.lower(jax.ShapeDtypeStruct(tuple(shape), jnp.dtype(dtype)),
                                  jax.ShapeDtypeStruct(tuple(shape), jnp.float32)).compile()
        except Exception:  # noqa: BLE001 - compiled on use instead, as before
            continue
    return ready


def clear_pass(outputs: list[Any], expected: list[Any], truth: list[Any], atol: float,
               rtol: float, ready: dict[tuple[Any, ...], Any] | None = None
               ) -> dict[str, float] | None:
    """The comparison's figures (``max_abs_err``, ``rel_err``, ``tol_fraction``) when every
    output clearly passes; None when the parent must compare (see the module's docstring).
    ``outputs``: the module's output leaves (on the chip); ``expected``: the reference's
    output leaves' (shape, dtype name) pairs; ``truth``: the float32 truth's leaves (on the
    chip or the host); ``ready``: the comparisons :func:`prepare` compiled ahead."""
    import jax
    import jax.numpy as jnp

    if len(outputs) != len(expected) or len(truth) != len(outputs):
        return None
    fn = _FIGURES.get((atol, rtol))
    if fn is None:
        fn = _FIGURES.setdefault((atol, rtol), jax.jit(
            lambda got, ref: _figures(got, ref, atol, rtol)))
    worst_abs = worst_rel = worst_fraction = 0.0
    for out, (shape, dtype), ref in zip(outputs, expected, truth, strict=True):
        if tuple(out.shape) != tuple(shape) or jnp.dtype(out.dtype) != jnp.dtype(dtype) \
                or tuple(ref.shape) != tuple(shape):
            return None
        compiled = (ready or {}).get((tuple(shape), jnp.dtype(out.dtype).name,
                                      jnp.dtype(ref.dtype).name))
        finite, max_abs, diff_norm, ref_norm, fraction = (
            float(v) for v in jax.device_get((compiled or fn)(out, ref)))
        if not finite or not fraction <= MARGIN or not math.isfinite(max_abs + diff_norm):
            return None
        rel = diff_norm / ref_norm if ref_norm > 0 else math.sqrt(
            float(jax.device_get(jnp.sum(jnp.square(out.astype(jnp.float32))))))
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, rel)
        worst_fraction = max(worst_fraction, fraction)
    return {"max_abs_err": worst_abs, "rel_err": worst_rel, "tol_fraction": worst_fraction}


__all__ = ["MARGIN", "clear_pass", "prepare"]
