"""One evaluation's result: :class:`EvaluationResult`, frozen, built once when an evaluation
ends (:meth:`jaxbench.evaluator.Evaluator.evaluate` returns it), read by its fields.

It travels as JSON in exactly one shape, today's ``evaluation`` event (docs/design.md, "The
evaluation result"): :meth:`EvaluationResult.to_event` is the one writer and
:meth:`EvaluationResult.read` the one reader, which also reads what older versions wrote (a
record without ``schema`` is version 1). Keys of other writers (a run's job key, an agent's
step, a field a newer version added) are kept as read in :attr:`EvaluationResult.extra` and
written back after the fields, so nothing read is lost.

Nested values are read-only (mappings are :class:`types.MappingProxyType`, lists tuples): a
result handed to several readers (a run's event, the report, an agent's prompt) cannot be
changed by one of them. A change is a new result (:meth:`EvaluationResult.replace`).
"""

from __future__ import annotations

import dataclasses
import time
import types
from collections.abc import Mapping
from typing import Any

from jaxbench.contract.records import SCHEMA_VERSION, source_sha256

EVENT_TYPE = "evaluation"


def freeze(value: Any) -> Any:
    """``value`` read-only all the way down: mappings as mapping proxies, lists as tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item) for item in value)
    return value


def unset(value: Any) -> bool:
    """Whether an optional field holds nothing to write: None, False or an empty tuple (by
    identity and type: a zero is a value)."""
    return value is None or value is False or (isinstance(value, tuple) and not value)


def thaw(value: Any) -> Any:
    """The JSON shape of a frozen value: plain dicts and lists."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


@dataclasses.dataclass(frozen=True)
class EvaluationResult:
    """The verdict of one kernel on one task, with its figures and how it was reached. The
    fields are the keys of the ``evaluation`` event, each documented in docs/design.md; the
    first group is always written, the rest only where set."""

    task: str
    target: str
    mode: str
    size: str
    status: str
    stage: str | None = None
    rule: str | None = None
    message: str = ""
    max_abs_err: float | None = None
    rel_err: float | None = None
    t_ref_ms: float | None = None
    t_kernel_ms: float | None = None
    speedup: float | None = None
    compile_s: float | None = None
    source_sha256: str = ""
    stages: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    versions: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    started_at: float = 0.0
    # written only where set
    kernel_file: str | None = None
    judged_on: str | None = None
    isolation: str | None = None
    # the kernel-enforced layers that held while candidate code ran: "seccomp+landlock+
    # namespaces", "seccomp", ..., "none" (nothing sealed it: the verdict may be forged)
    sealed: str | None = None
    kernel_backend: str | None = None
    timing_method: str | None = None
    chip: str | None = None
    lowering_fidelity: str | None = None
    timeout_s: float | None = None
    trial_nonce: str | None = None
    device_kind: str | None = None
    backend: str | None = None
    structure: Mapping[str, Any] | None = None
    tolerance: Mapping[str, float] | None = None
    tol_fraction: float | None = None
    roofline_fraction: float | None = None
    peak_flops: float | None = None
    peak_bytes_per_s: float | None = None
    trials: int | None = None
    fits: Mapping[str, Any] | None = None
    wall_s: float | None = None
    spans: Mapping[str, float] | None = None
    warnings: tuple[str, ...] = ()
    review: str | None = None
    tool_faults: tuple[Any, ...] = ()
    smem_uncertain: tuple[Any, ...] = ()
    triton_compile: Any = None  # Triton's compile for the chip: its report, or why skipped
    candidate_frames: tuple[str, ...] = ()  # untrusted text, bounded, never parsed
    output: str | None = None  # untrusted text, bounded, never parsed
    artifacts: Mapping[str, Any] | None = None
    ray_node: str | None = None  # the Ray node it ran on
    debug: bool = False  # ``jaxbench eval --debug``: never counts, never recorded in a run
    synthetic: bool = False  # recorded by an agent without running (an answer with no code)
    # keys of other writers and other versions, kept as read and written back
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    schema: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, (Mapping, list, tuple)):
                object.__setattr__(self, field.name, freeze(value))

    def __reduce__(self) -> Any:  # mapping proxies do not pickle: a result crosses as its event
        return (EvaluationResult.read, (self.to_event(),))

    @classmethod
    def start(cls, task: str, target: str, mode: str, size: str, source: str, *,
              versions: Mapping[str, Any], **fields: Any) -> EvaluationResult:
        """A result for ``source`` with no verdict yet: its identity, the kernel's hash, the
        host's ``versions`` (:func:`jaxbench.backends.host.versions`) and the time."""
        return cls(task=task, target=target, mode=mode, size=size, status="",
                   source_sha256=source_sha256(source), versions=versions,
                   started_at=time.time(), **fields)

    def replace(self, **changes: Any) -> EvaluationResult:
        return dataclasses.replace(self, **changes)

    def to_event(self, **more: Any) -> dict[str, Any]:
        """The ``evaluation`` event's JSON object: ``type`` and ``schema``, the fields always
        written, those set, the kept keys of :attr:`extra`, then ``more`` (a caller's own keys,
        such as a run's job key)."""
        event: dict[str, Any] = {"type": EVENT_TYPE, "schema": self.schema}
        for field in dataclasses.fields(self):
            if field.name in ("extra", "schema"):
                continue
            value = getattr(self, field.name)
            if field.name in ALWAYS or not unset(value):
                event[field.name] = thaw(value)
        event.update(thaw(self.extra))
        event.update(more)
        return event

    @classmethod
    def read(cls, event: Mapping[str, Any]) -> EvaluationResult:
        """A result from an ``evaluation`` event of any version; keys that are not fields are
        kept in :attr:`extra`. A record without ``status`` or ``task`` is a ValueError."""
        if not isinstance(event, Mapping):
            raise ValueError("an evaluation result must be a JSON object")
        missing = [key for key in ("task", "status") if not isinstance(event.get(key), str)]
        if missing:
            raise ValueError(f"not an evaluation result: no {', '.join(missing)}")
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in event.items():
            if key == "type":
                continue
            if key in FIELDS and key != "extra":
                known[key] = value
            else:
                extra[key] = value
        for key in ("target", "mode", "size"):
            known.setdefault(key, "")
        for key in ("warnings", "tool_faults", "smem_uncertain", "candidate_frames"):
            if key in known and not isinstance(known[key], (list, tuple)):
                extra[key], known[key] = known[key], ()
        known.setdefault("schema", 1)  # written before the schema existed
        return cls(**known, extra=extra)


FIELDS = frozenset(f.name for f in dataclasses.fields(EvaluationResult))
ALWAYS = frozenset(("task", "target", "mode", "size", "status", "stage", "rule", "message",
                    "max_abs_err", "rel_err", "t_ref_ms", "t_kernel_ms", "speedup", "compile_s",
                    "source_sha256", "stages", "versions", "started_at"))


__all__ = ["ALWAYS", "EVENT_TYPE", "FIELDS", "EvaluationResult", "freeze", "thaw"]
