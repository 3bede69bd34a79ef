"""The HTTP API's bodies as typed records: what a client sends (:class:`SubmissionBody`,
:class:`BatchBody`) and what it reads back (:class:`SubmissionReply`, :class:`BatchReply`,
:class:`Health`, :class:`TaskSummary`).

The JSON on the wire is the service's (docs/serve.md, "The API"); a submission's ``result`` is
the verdict's ``evaluation`` event (:meth:`EvaluationResult.to_event
<jaxbench.contract.EvaluationResult.to_event>`), read here with :meth:`EvaluationResult.read
<jaxbench.contract.EvaluationResult.read>`, so a caller reads its fields (``reply.result.speedup``)
whichever side of the wire it is on. Nothing here needs the serve extra.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NotRequired, Required, TypedDict

from jaxbench.contract import EvaluationResult, SubmissionState
from jaxbench.serve.rewards import Reward, RewardNote

if TYPE_CHECKING:
    from jaxbench.serve.ledger import SubmissionView

FINISHED = (SubmissionState.DONE, SubmissionState.FAILED)


# -- what a client sends -----------------------------------------------------------------------------

class SubmissionOptions(TypedDict, total=False):
    """What a submission may set besides its source, its task and the evaluation's timeout (the
    clients' ``evaluate``, whose ``timeout_s`` is how long it waits); a field left out, or
    None, takes the service's default."""

    target: str | None  # tpu or gpu; default: the source's TARGET, else tpu
    size: str | None
    chip: str | None  # the chip to judge for (A100, v5e, ...)
    mode: str | None  # auto, interpret or device
    trials: int | None
    id: str | None  # the caller's id: a retry with the same id is the same submission


class SubmissionFields(SubmissionOptions, total=False):
    """A submission's fields besides its source and task (``POST /v1/submissions``, a batch
    and each of its items)."""

    timeout_s: float | None  # the evaluation's; default: the task's


class SubmissionBody(SubmissionFields):
    """``POST /v1/submissions``."""

    source: str
    task: str


class BatchItem(SubmissionFields, total=False):
    """One kernel of a batch: its fields win over the batch's."""

    source: Required[str]
    task: str | None


class BatchBody(SubmissionFields):
    """``POST /v1/batches``: ``id`` is the batch's."""

    items: list[BatchItem]
    task: NotRequired[str | None]


# -- what a client reads -----------------------------------------------------------------------------

class ServiceStatus(TypedDict):
    """The service's state at a glance (``GET /v1/health``, the metrics' gauges)."""

    queue_length: int
    in_flight: int
    submissions: int
    workers: int
    executor: str
    stopping: bool


class Health(ServiceStatus):
    """``GET /v1/health``: ``status`` ``ok``, the service's state and the latency quantiles
    (``p50``, ``p90``, ``p99``: seconds from submission to verdict, None before any)."""

    status: str
    latency: dict[str, float | None]


class TaskSummary(TypedDict):
    """A task as ``GET /v1/tasks`` lists it: identity, sizes, the targets it ships seed kernels
    for, tolerances, and its prompt where asked for (always on ``GET /v1/tasks/{task}``)."""

    id: str
    suite: str
    description: str
    sizes: list[str]
    targets: list[str]
    atol: float
    rtol: float
    prompt: NotRequired[str]


@dataclasses.dataclass(frozen=True)
class SubmissionReply:
    """A submission as the service answers it. ``state``: queued, running, done (``status``,
    ``message``, ``result`` and ``reward``) or failed (``error``: no verdict). ``mode`` is the
    resolved one (interpret or device). ``result`` is the verdict's
    :class:`~jaxbench.contract.EvaluationResult`; ``reward`` is :func:`jaxbench.serve.reward`'s
    (before a verdict in interpret mode: ``{"value": None, "note": ...}``). ``duplicate``: this
    request repeated an id already submitted. Keys of a newer service are kept in ``extra``."""

    id: str
    state: SubmissionState
    task: str
    target: str
    size: str
    mode: str
    trials: int
    source_sha256: str
    created: float
    chip: str | None = None
    batch: str | None = None
    finished: float | None = None
    cached_from: str | None = None
    duplicate: bool = False
    status: str | None = None
    message: str | None = None
    result: EvaluationResult | None = None
    reward: Reward | RewardNote | None = None
    error: str | None = None
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def finished_state(self) -> bool:
        """Whether it has its outcome (done or failed)."""
        return self.state in FINISHED

    @property
    def reward_value(self) -> float | None:
        """The reward's value (what a trainer adds up); None without a verdict."""
        return None if self.reward is None else self.reward["value"]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SubmissionReply:
        """A submission from the service's JSON; ValueError for JSON that is not one."""
        if not isinstance(data, Mapping):
            raise ValueError(f"the service answered {type(data).__name__}, not a submission")
        result = data.get("result")
        return cls._of(data, None if result is None else EvaluationResult.read(result))

    @classmethod
    def from_view(cls, view: SubmissionView) -> SubmissionReply:
        """A submission from the service's own view of it (in the service's process)."""
        return cls._of(view, view.get("result"))

    @classmethod
    def _of(cls, data: Mapping[str, Any], result: EvaluationResult | None) -> SubmissionReply:
        known = {key: value for key, value in data.items() if key in _REPLY_FIELDS}
        extra = {key: value for key, value in data.items() if key not in _REPLY_FIELDS}
        try:
            state = SubmissionState(data["state"])
            return cls(**{**known, "state": state, "result": result,
                          "duplicate": bool(data.get("duplicate"))}, extra=extra)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a submission the service answers: {exc!r}") from None

    def to_json(self) -> dict[str, Any]:
        """The JSON the service answered (fields it leaves out when unset left out; the result
        as its event)."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "extra" or value is None or (field.name == "duplicate" and not value):
                continue
            out[field.name] = value.to_event() if isinstance(value, EvaluationResult) else value
        out.update(self.extra)
        return out


_REPLY_FIELDS = frozenset(f.name for f in dataclasses.fields(SubmissionReply)) - {"extra"}


@dataclasses.dataclass(frozen=True)
class BatchReply:
    """A batch as the service answers it: its id, whether every submission has its outcome,
    and its submissions in the order they were sent."""

    batch: str
    done: bool
    submissions: tuple[SubmissionReply, ...]

    @property
    def ids(self) -> list[str]:
        return [sub.id for sub in self.submissions]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchReply:
        """A batch from the service's JSON; ValueError for JSON that is not one."""
        if not isinstance(data, Mapping) or not isinstance(data.get("batch"), str) \
                or not isinstance(data.get("submissions"), list):
            raise ValueError("not a batch the service answers")
        return cls(batch=data["batch"], done=bool(data.get("done")),
                   submissions=tuple(SubmissionReply.from_json(s) for s in data["submissions"]))


__all__ = ["FINISHED", "BatchBody", "BatchItem", "BatchReply", "Health", "ServiceStatus",
           "SubmissionBody", "SubmissionFields", "SubmissionOptions", "SubmissionReply",
           "TaskSummary"]
