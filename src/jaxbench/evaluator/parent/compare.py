"""Stage 4's verdict, in the trusted parent: candidate outputs against the float32 ground truth.

The ground truth is the task's reference evaluated in float32 on the same
inputs upcast. The candidate's output must match the bf16 reference's shape
and dtype exactly, be finite everywhere, and satisfy
``|out - truth| <= atol + rtol * |truth|`` elementwise, compared in float32.
Also here: the trial keys derived from the run's secret (:func:`derive_keys`), which the
parent hands to the trusted runner, and what one evaluation derives them from
(:func:`evaluation_inputs`). The tools that run every check in one process for
trusted kernels (:mod:`jaxbench.evaluator.inprocess`, the task validator) use the same.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbench.backends.host import cpu_device
from jaxbench.contract import Rule
from jaxbench.evaluator.common.masks import where
from jaxbench.tasks.spec import Task, float32_reference


@dataclass
class Verdict:
    """``max_abs_err``/``rel_err`` are None when an output is not finite (an error of a NaN is
    not a number); ``tol_fraction`` is the worst element's error over its tolerance
    (``|out - truth| / (atol + rtol * |truth|)``; at most 1 passes). ``rule``: the code of a
    failed verdict (``Rule.OUTPUT_TYPES``, ``Rule.NAN_INF`` or ``Rule.MISMATCH``), None when
    it passes."""

    ok: bool
    message: str
    max_abs_err: float | None = None
    rel_err: float | None = None
    tol_fraction: float | None = None
    nonfinite: int = 0
    rule: Rule | None = None


def derive_keys(secret: bytes, task_id: str, size: str, count: int, purpose: str) -> list[list[int]]:
    """Per-trial PRNG key data from the run's secret: unpredictable without the secret."""
    keys = []
    for i in range(count):
        digest = hashlib.sha256(secret + f"|{task_id}|{size}|{purpose}|{i}".encode()).digest()
        keys.append([int.from_bytes(digest[:4], "little"), int.from_bytes(digest[4:8], "little")])
    return keys


def key_from_data(data: Sequence[int]) -> jax.Array:
    return jax.random.wrap_key_data(np.asarray(data, np.uint32))


class GroundTruth:
    """Computes (and caches) the float32 ground truth per task, size and key."""

    def __init__(self) -> None:
        self._fns: dict[str, Callable[..., Any]] = {}
        self._cache: dict[tuple, list[np.ndarray]] = {}
        self._lock = threading.Lock()  # evaluations run in threads; compute each truth once
        self._cancelled = threading.Event()

    def __call__(self, task: Task, size: str, key: Sequence[int]) -> list[np.ndarray]:
        cache_key = (task.id, size, tuple(key))
        with self._lock:
            if cache_key not in self._cache:
                self._cache[cache_key] = self.uncached(task, size, key)
            return self._cache[cache_key]

    def uncached(self, task: Task, size: str, key: Sequence[int]) -> list[np.ndarray]:
        """The truth of one key's inputs, drawn on the host CPU, kept nowhere (a key never
        seen again: an evaluation's fresh keys)."""
        with jax.default_device(cpu_device()):
            inputs = task.make_inputs(key_from_data(key), size)
        return self.of_inputs(task, inputs)

    def of_inputs(self, task: Task, inputs: Sequence[Any]) -> list[np.ndarray]:
        """The truth of inputs already drawn (``task.make_inputs``), uncached: the reference
        on them upcast to float32, on the host CPU, always (an accelerator belongs to the
        trusted runner)."""
        cpu = cpu_device()
        with jax.default_device(cpu):
            fn = self._fns.setdefault(task.id, float32_reference(task))
            truth = fn(*jax.device_put(tuple(inputs), cpu))
            # Copies that own their memory: a view would keep XLA's buffers alive as long as
            # the cache, and freeing those from a thread at interpreter exit aborts.
            return [np.array(x, np.float32, copy=True) for x in jax.tree_util.tree_leaves(truth)]

    def cancel(self) -> None:
        """No more prefetching (an evaluator closing: a full-size truth can take minutes)."""
        self._cancelled.set()

    def prefetch(self, task: Task, size: str, keys: Sequence[Sequence[int]]) -> None:
        """Computes the truths for ``keys`` ahead of need (errors surface on the real call);
        stops before the next key once :meth:`cancel` was called."""
        for key in keys:
            if self._cancelled.is_set():
                return
            try:
                self(task, size, key)
            except Exception:  # noqa: BLE001 - the judging call raises it again
                return


def check_outputs(outputs: list[np.ndarray], expected: Any, truth: list[np.ndarray],
                  atol: float, rtol: float) -> Verdict:
    """Shape/dtype match, finiteness and tolerance, leaf by leaf."""
    exp_leaves = jax.tree_util.tree_leaves(expected)
    if len(outputs) != len(exp_leaves):
        return Verdict(False, f"kernel returned {len(outputs)} arrays, the reference returns "
                              f"{len(exp_leaves)}", rule=Rule.OUTPUT_TYPES)
    worst_abs, worst_rel, worst_fraction = 0.0, 0.0, 0.0
    for i, (out, exp, ref) in enumerate(zip(outputs, exp_leaves, truth, strict=True)):
        name = f"output {i}" if len(outputs) > 1 else "output"
        if tuple(out.shape) != tuple(exp.shape):
            return Verdict(False, f"{name} shape {tuple(out.shape)} != expected {tuple(exp.shape)}",
                           rule=Rule.OUTPUT_TYPES)
        if jnp.dtype(out.dtype) != jnp.dtype(exp.dtype):
            return Verdict(False, f"{name} dtype {out.dtype} != expected {exp.dtype}",
                           rule=Rule.OUTPUT_TYPES)
        got = out.astype(np.float32)
        finite = np.isfinite(got)
        if not finite.all():
            bad = ~finite
            count = int(bad.sum())
            return Verdict(False, f"{name} has {count} NaN/Inf of {got.size} elements "
                                  f"({count / got.size:.1%}), {where(bad)}: e.g. never written, "
                                  "or read out of bounds", nonfinite=count, rule=Rule.NAN_INF)
        err = np.abs(got - ref)
        tol = atol + rtol * np.abs(ref)
        max_abs = float(err.max()) if err.size else 0.0
        denom = float(np.linalg.norm(ref))
        rel = float(np.linalg.norm(got - ref) / denom) if denom > 0 else float(np.linalg.norm(got))
        fraction = np.divide(err, tol, out=np.where(err > 0, np.inf, 0.0).astype(np.float32),
                             where=tol > 0)
        worst_fraction = max(worst_fraction, float(fraction.max()) if fraction.size else 0.0)
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, rel)
        over = err > tol
        if over.any():
            # Where, how many and by how much against the tolerance: never a value of the
            # output or of the truth (a caller that resubmits must learn nothing of the truth
            # from the message; docs/evaluator.md, "What a verdict reveals").
            idx = np.unravel_index(int(np.argmax(err - tol)), err.shape)
            place = f", {where(over)}" if over.ndim else ""
            return Verdict(
                False,
                f"{name}: {int(over.sum())} of {err.size} elements ({over.mean():.1%}) exceed "
                f"atol {atol:g} + rtol {rtol:g}·|truth|{place}; worst at "
                f"{tuple(int(j) for j in idx)}, {float(fraction[idx]):.3g}x its tolerance",
                max_abs, rel, worst_fraction, rule=Rule.MISMATCH)
    return Verdict(True, "", worst_abs, worst_rel, worst_fraction)


def evaluation_inputs(secret: bytes, truth: GroundTruth, fresh: bool
                      ) -> tuple[str | None, bytes, GroundTruth | FreshTruth]:
    """(nonce, secret, truth): what an evaluation's keys derive from and what computes their
    float32 truths, given the run's ``secret`` and the evaluator's cached ``truth``. (None,
    the run's secret, the cached truths), or with ``fresh`` (``Settings.fresh_keys``) a nonce
    drawn for this evaluation alone, in hex, :func:`nonce_secret` of the run's secret and it,
    and :class:`FreshTruth` (keys never seen again: caching their truths would keep every
    evaluation's in a long service). The result records the nonce (``trial_nonce``): with
    the secret a run reveals when it ends, anyone re-derives the keys; without it, nobody."""
    if not fresh:
        return None, secret, truth
    nonce = secrets.token_hex(16)
    return nonce, nonce_secret(secret, nonce), FreshTruth(truth)


def nonce_secret(secret: bytes, nonce: str) -> bytes:
    """``sha256("jaxbench-trial-nonce|" secret "|" nonce)``: the secret of one evaluation."""
    return hashlib.sha256(b"jaxbench-trial-nonce|" + secret + b"|" + nonce.encode()).digest()


class FreshTruth:
    """The float32 truths of one evaluation's fresh keys: computed by the evaluator's ground
    truth (``of_inputs``, its compiled references) on the inputs of each key, held by this
    evaluation only (not prefetched, not in the evaluator's cache)."""

    def __init__(self, shared: GroundTruth) -> None:
        self.shared = shared

    def __call__(self, task: Task, size: str, key: Sequence[int]) -> list[np.ndarray]:
        return self.shared.uncached(task, size, key)


class TimedTruth:
    """The parent's float32 truth (interpret mode), its seconds (computing, or waiting for the
    prefetch) added to ``parts["truth"]``."""

    def __init__(self, truth: GroundTruth | FreshTruth, parts: dict[str, float]) -> None:
        self.truth, self.parts = truth, parts

    def __call__(self, task: Task, size: str, key: Sequence[int]) -> list[np.ndarray]:
        begun = time.monotonic()
        try:
            return self.truth(task, size, key)
        finally:
            self.parts["truth"] = self.parts.get("truth", 0.0) + time.monotonic() - begun
