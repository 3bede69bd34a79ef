"""What a service is started with and what it is asked: its configuration, one request, and
the error a refused request raises. Every part of the service (:mod:`jaxbench.serve.service`
and the pieces it is made of) and every front end (HTTP, OpenEnv) speaks in these."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from jaxbench.serve.rewards import DEFAULT_TABLE, RewardTable

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
DEFAULT_MAX_SOURCE_BYTES = 256 * 1024
DEFAULT_MAX_BATCH = 256
DEFAULT_MAX_QUEUE = 100_000


class ServeError(Exception):
    """A request the service refuses: HTTP ``status``, a one-line message, extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass
class ServeConfig:
    """What a service is started with (``jaxbench serve``'s options)."""

    out: Path = Path("runs/serve")
    executor: str = "local"
    ray_address: str | None = None
    workers: int = 2
    default_mode: str = "auto"
    max_source_bytes: int = DEFAULT_MAX_SOURCE_BYTES
    max_batch: int = DEFAULT_MAX_BATCH
    max_queue: int = DEFAULT_MAX_QUEUE
    quota: int | None = None  # per caller and window, unless its token sets its own
    quota_window_s: float = 3600.0
    concurrency: int | None = None  # unfinished submissions per caller
    retries: int = 2  # evaluations that end without a verdict (harness errors, lost Ray nodes)
    cache: bool = True
    rewards: RewardTable = field(default_factory=lambda: DEFAULT_TABLE)


@dataclass
class Request:
    """One kernel to evaluate, as a caller asked for it."""

    task: str
    source: str
    target: str | None = None
    size: str = "small"
    chip: str | None = None
    mode: str | None = None
    trials: int = 3
    timeout_s: float | None = None
    id: str | None = None


__all__ = ["DEFAULT_MAX_BATCH", "DEFAULT_MAX_QUEUE", "DEFAULT_MAX_SOURCE_BYTES", "ID_PATTERN",
           "Request", "ServeConfig", "ServeError"]
