"""Python clients for ``jaxbench serve``: :class:`Client` (blocking) and :class:`AsyncClient`
(asyncio), both on ``httpx``.

Every submission carries an id the client draws (unless given), so a request retried after a
dropped connection, a 429 or a 503 is the same submission on the server, never a second
evaluation. Retries wait as ``Retry-After`` says, else back off (0.5 s, 1 s, 2 s, ... at most
``max_retry_wait_s`` each), and go on for ``retry_s`` seconds (default 300: a service restarted
on its run directory resumes, so a trainer outlives the restart); ``retries`` caps their number
too (``retries=0``: none). Waiting for verdicts (``wait_batch``, ``follow``) opens the stream again
when the service drops it, within the same budget.

A submission comes back as a :class:`~jaxbench.serve.wire.SubmissionReply`, its verdict's
``result`` read into an :class:`~jaxbench.contract.EvaluationResult`
(:meth:`~jaxbench.contract.EvaluationResult.read`), so its fields are read as attributes:

    from jaxbench.serve import Client
    with Client("http://127.0.0.1:8000", token=None) as judge:
        verdict = judge.evaluate(open("my_gemm.py").read(), "8p_gemm")
        print(verdict.status, verdict.reward_value, verdict.message)
        if verdict.result is not None:
            print(verdict.result.speedup, verdict.result.t_kernel_ms)
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any, Unpack, cast

import httpx

from jaxbench.serve.wire import (
    FINISHED,
    BatchBody,
    BatchItem,
    BatchReply,
    Health,
    SubmissionBody,
    SubmissionFields,
    SubmissionOptions,
    SubmissionReply,
    TaskSummary,
)

TOKEN_ENV = "JAXBENCH_SERVE_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = (429, 502, 503, 504)
DEFAULT_RETRY_S = 300.0  # how long a request is retried: a service restart takes tens of seconds


class ServeClientError(RuntimeError):
    """The service refused a request: ``status`` (HTTP) and ``detail`` (its one-line reason)."""

    def __init__(self, status: int, detail: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail
        self.retry_after_s = retry_after_s


def _headers(token: str | None) -> dict[str, str]:
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    return {"Authorization": f"Bearer {token}"} if token else {}


def _set(fields: SubmissionFields) -> dict[str, object]:
    """The fields given a value (None: the service's default)."""
    return {k: v for k, v in fields.items() if v is not None}


def _submission(source: str, task: str, fields: SubmissionFields) -> SubmissionBody:
    """One submission's body: the fields set, and an id (drawn unless given)."""
    body = cast(SubmissionBody, {"source": source, "task": task, **_set(fields)})
    body.setdefault("id", uuid.uuid4().hex)
    return body


def _batch(items: Iterable[str | BatchItem], task: str | None, fields: SubmissionFields) -> BatchBody:
    """A batch's body: its items (a source alone, or with its own fields), each with an id
    (drawn unless given), the batch's fields set, and the batch's id (drawn unless given)."""
    entries: list[BatchItem] = []
    for item in items:
        entry: BatchItem = {"source": item} if isinstance(item, str) else {**item}
        entry.setdefault("id", uuid.uuid4().hex)
        entries.append(entry)
    body = cast(BatchBody, {"items": entries, "task": task, **_set(fields)})
    if task is None:
        del body["task"]
    body.setdefault("id", uuid.uuid4().hex)
    return body


def _error(response: httpx.Response) -> ServeClientError:
    try:
        detail = response.json().get("detail", response.text)
    except (ValueError, AttributeError):
        detail = response.text
    retry = response.headers.get("retry-after")
    return ServeClientError(response.status_code, str(detail),
                            float(retry) if retry and retry.replace(".", "", 1).isdigit() else None)


def _retry_wait(attempt: int, error: ServeClientError | None, cap: float) -> float:
    if error is not None and error.retry_after_s is not None:
        return min(cap, error.retry_after_s)
    return min(cap, 0.5 * 2 ** attempt)


class _Connection:
    """What both clients hold: the service's URL, the retry policy and an httpx client of
    ``http`` (``httpx.Client`` or ``httpx.AsyncClient``)."""

    _HTTP: Any = None

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, *, timeout_s: float = 60.0,
                 retries: int | None = None, retry_s: float = DEFAULT_RETRY_S,
                 max_retry_wait_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.retries = retries  # at most this many retries of a request (None: as many as retry_s allows)
        self.retry_s = retry_s  # retries stop this many seconds after a request's first try
        self.max_retry_wait_s = max_retry_wait_s
        self._http = self._HTTP(base_url=self.url, headers=_headers(token),
                                timeout=httpx.Timeout(timeout_s, connect=10.0), trust_env=False)

    def _next_wait(self, attempt: int, started: float, error: ServeClientError | None) -> float | None:
        """Seconds to wait before retry ``attempt + 1`` of a request first tried at ``started``
        (monotonic), or None when the retries are spent (by count or by time)."""
        if self.retries is not None and attempt >= self.retries:
            return None
        left = self.retry_s - (time.monotonic() - started)
        if left <= 0:
            return None
        return min(left, _retry_wait(attempt, error, self.max_retry_wait_s))

    def _unreachable(self, started: float, exc: Exception) -> ServeClientError:
        spent = time.monotonic() - started
        return ServeClientError(0, f"cannot reach {self.url} (retried for {spent:.0f} s): {exc}")


def _retryable(exc: Exception) -> bool:
    """A dropped connection, or a refusal worth trying again (429, 502-504)."""
    if isinstance(exc, ServeClientError):
        return exc.status == 0 or exc.status in RETRY_STATUSES
    return isinstance(exc, httpx.TransportError)


class Client(_Connection):
    """A blocking client. ``token`` defaults to ``JAXBENCH_SERVE_TOKEN``."""

    _HTTP = httpx.Client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, *, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """The answer's JSON (or text) after the retries; ServeClientError for a refusal (status
        0: the service could not be reached for ``retry_s`` seconds)."""
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                extra = dict(timeout=timeout_s + 30.0) if timeout_s else {}
                response = self._http.request(method, path, **kwargs, **extra)
            except httpx.TransportError as exc:
                wait = self._next_wait(attempt, started, None)
                if wait is None:
                    raise self._unreachable(started, exc) from exc
                time.sleep(wait)
                attempt += 1
                continue
            if response.status_code < 400:
                if response.headers.get("content-type", "").startswith("application/json"):
                    return response.json()
                return response.text
            error = _error(response)
            retry = response.status_code in RETRY_STATUSES
            wait = self._next_wait(attempt, started, error) if retry else None
            if wait is None:
                raise error
            time.sleep(wait)
            attempt += 1

    # -- the service and its tasks --------------------------------------------------------------
    def health(self) -> Health:
        return self._call("GET", "/v1/health")

    def tasks(self, suite: str | None = None, prompts: bool = False, target: str = "tpu",
              size: str = "small", mode: str = "interpret") -> list[TaskSummary]:
        params = {"prompts": prompts, "target": target, "size": size, "mode": mode,
                  **({"suite": suite} if suite else {})}
        return self._call("GET", "/v1/tasks", params=params)

    def task(self, task_id: str, target: str = "tpu", size: str = "small",
             mode: str = "interpret") -> TaskSummary:
        """One task with its prompt."""
        return self._call("GET", f"/v1/tasks/{task_id}",
                          params={"target": target, "size": size, "mode": mode})

    def seed(self, task_id: str, target: str = "tpu") -> str:
        return self._call("GET", f"/v1/tasks/{task_id}/seed", params={"target": target})

    # -- submitting and reading ------------------------------------------------------------------
    def submit(self, source: str, task: str, *, wait_s: float = 0.0,
               **fields: Unpack[SubmissionFields]) -> SubmissionReply:
        """One kernel; fields: target, size, chip, mode, trials, timeout_s, id. Waits up to
        ``wait_s`` for its verdict."""
        return SubmissionReply.from_json(self._call(
            "POST", "/v1/submissions", json=_submission(source, task, fields),
            params={"wait": wait_s}, timeout_s=wait_s))

    def submit_batch(self, items: Iterable[str | BatchItem], task: str | None = None, *,
                     wait_s: float = 0.0, **fields: Unpack[SubmissionFields]) -> BatchReply:
        """Kernels (sources, or dicts with their own fields) sharing the batch's fields."""
        return BatchReply.from_json(self._call(
            "POST", "/v1/batches", json=_batch(items, task, fields), params={"wait": wait_s},
            timeout_s=wait_s))

    def result(self, sub_id: str, wait_s: float = 0.0) -> SubmissionReply:
        """The submission ``sub_id``, once finished or after ``wait_s``."""
        return SubmissionReply.from_json(self._call(
            "GET", f"/v1/submissions/{sub_id}", params={"wait": wait_s}, timeout_s=wait_s))

    def batch(self, batch_id: str, wait_s: float = 0.0) -> BatchReply:
        return BatchReply.from_json(self._call(
            "GET", f"/v1/batches/{batch_id}", params={"wait": wait_s}, timeout_s=wait_s))

    def stream(self, ids: list[str] | None = None, batch: str | None = None,
               timeout_s: float = 3600.0) -> Iterator[SubmissionReply]:
        """Each submission (of ``ids``, or of ``batch``) as it finishes."""
        path = f"/v1/batches/{batch}/stream" if batch else "/v1/stream"
        params: dict[str, float | str] = dict(timeout=timeout_s)
        if not batch:
            params["ids"] = ",".join(ids or [])
        with self._http.stream("GET", path, params=params, timeout=timeout_s + 30.0) as response:
            if response.status_code >= 400:
                response.read()
                raise _error(response)
            for line in response.iter_lines():
                if line.strip():
                    yield SubmissionReply.from_json(json.loads(line))

    def evaluate(self, source: str, task: str, *, timeout_s: float = 3600.0,
                 **fields: Unpack[SubmissionOptions]) -> SubmissionReply:
        """Submits one kernel and waits up to ``timeout_s`` for its verdict: the finished
        submission (or as it is then). Fields: target, size, chip, mode, trials, id."""
        deadline = time.monotonic() + timeout_s
        sub = self.submit(source, task, wait_s=min(60.0, timeout_s), **fields)
        while not sub.finished_state and time.monotonic() < deadline:
            sub = self.result(sub.id, wait_s=min(60.0, max(0.1, deadline - time.monotonic())))
        return sub

    def evaluate_many(self, sources: Iterable[str | BatchItem], task: str | None = None, *,
                      timeout_s: float = 3600.0,
                      **fields: Unpack[SubmissionOptions]) -> list[SubmissionReply]:
        """A batch, waited for: the finished submissions in the order of ``sources``."""
        return self.wait_batch(self.submit_batch(sources, task, **fields), timeout_s)

    def follow(self, ids: list[str], timeout_s: float = 3600.0, *,
               batch: str | None = None) -> Iterator[SubmissionReply]:
        """Each of the submissions ``ids`` (all of ``batch``'s when given) once, as it finishes,
        for up to ``timeout_s``; those unfinished then are not yielded. A stream the service
        drops (a restart: it resumes its queue) is opened again, retried as requests are;
        ServeClientError when the retries are spent."""
        deadline = time.monotonic() + timeout_s
        seen: set[str] = set()
        attempt, started = 0, 0.0
        while len(seen) < len(ids):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            pending = [i for i in ids if i not in seen]
            try:
                for sub in self.stream(None if batch else pending, batch=batch, timeout_s=max(0.1, left)):
                    if sub.finished_state and sub.id not in seen:
                        seen.add(sub.id)
                        attempt = 0
                        yield sub
            except (httpx.TransportError, ServeClientError) as exc:
                if not _retryable(exc):
                    raise
                started = started if attempt else time.monotonic()
                refusal = exc if isinstance(exc, ServeClientError) else None
                wait = self._next_wait(attempt, started, refusal)
                if wait is None:
                    raise (refusal or self._unreachable(started, exc)) from exc
                time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
                attempt += 1

    def wait_batch(self, batch: BatchReply, timeout_s: float = 3600.0) -> list[SubmissionReply]:
        """The submissions of a submitted batch (``submit_batch``'s answer) once finished (or
        as they are after ``timeout_s``), in its order. Outlives a restart of the service."""
        found = {s.id: s for s in batch.submissions if s.finished_state}
        if len(found) < len(batch.submissions):
            for sub in self.follow(batch.ids, timeout_s, batch=batch.batch):
                found[sub.id] = sub
        return [found.get(i) or self.result(i) for i in batch.ids]


class AsyncClient(_Connection):
    """The same calls as :class:`Client`, awaited."""

    _HTTP = httpx.AsyncClient

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _call(self, method: str, path: str, *, timeout_s: float | None = None, **kwargs: Any) -> Any:
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                extra = dict(timeout=timeout_s + 30.0) if timeout_s else {}
                response = await self._http.request(method, path, **kwargs, **extra)
            except httpx.TransportError as exc:
                wait = self._next_wait(attempt, started, None)
                if wait is None:
                    raise self._unreachable(started, exc) from exc
                await asyncio.sleep(wait)
                attempt += 1
                continue
            if response.status_code < 400:
                if response.headers.get("content-type", "").startswith("application/json"):
                    return response.json()
                return response.text
            error = _error(response)
            retry = response.status_code in RETRY_STATUSES
            wait = self._next_wait(attempt, started, error) if retry else None
            if wait is None:
                raise error
            await asyncio.sleep(wait)
            attempt += 1

    async def health(self) -> Health:
        return await self._call("GET", "/v1/health")

    async def tasks(self, suite: str | None = None, prompts: bool = False, target: str = "tpu",
                    size: str = "small", mode: str = "interpret") -> list[TaskSummary]:
        params = {"prompts": prompts, "target": target, "size": size, "mode": mode,
                  **({"suite": suite} if suite else {})}
        return await self._call("GET", "/v1/tasks", params=params)

    async def task(self, task_id: str, target: str = "tpu", size: str = "small",
                   mode: str = "interpret") -> TaskSummary:
        return await self._call("GET", f"/v1/tasks/{task_id}",
                                params={"target": target, "size": size, "mode": mode})

    async def seed(self, task_id: str, target: str = "tpu") -> str:
        return await self._call("GET", f"/v1/tasks/{task_id}/seed", params={"target": target})

    async def submit(self, source: str, task: str, *, wait_s: float = 0.0,
                     **fields: Unpack[SubmissionFields]) -> SubmissionReply:
        return SubmissionReply.from_json(await self._call(
            "POST", "/v1/submissions", json=_submission(source, task, fields),
            params={"wait": wait_s}, timeout_s=wait_s))

    async def submit_batch(self, items: Iterable[str | BatchItem], task: str | None = None, *,
                           wait_s: float = 0.0, **fields: Unpack[SubmissionFields]) -> BatchReply:
        return BatchReply.from_json(await self._call(
            "POST", "/v1/batches", json=_batch(items, task, fields), params={"wait": wait_s},
            timeout_s=wait_s))

    async def result(self, sub_id: str, wait_s: float = 0.0) -> SubmissionReply:
        return SubmissionReply.from_json(await self._call(
            "GET", f"/v1/submissions/{sub_id}", params={"wait": wait_s}, timeout_s=wait_s))

    async def batch(self, batch_id: str, wait_s: float = 0.0) -> BatchReply:
        return BatchReply.from_json(await self._call(
            "GET", f"/v1/batches/{batch_id}", params={"wait": wait_s}, timeout_s=wait_s))

    async def stream(self, ids: list[str] | None = None, batch: str | None = None,
                     timeout_s: float = 3600.0) -> AsyncIterator[SubmissionReply]:
        path = f"/v1/batches/{batch}/stream" if batch else "/v1/stream"
        params: dict[str, float | str] = dict(timeout=timeout_s)
        if not batch:
            params["ids"] = ",".join(ids or [])
        async with self._http.stream("GET", path, params=params, timeout=timeout_s + 30.0) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _error(response)
            async for line in response.aiter_lines():
                if line.strip():
                    yield SubmissionReply.from_json(json.loads(line))

    async def evaluate(self, source: str, task: str, *, timeout_s: float = 3600.0,
                       **fields: Unpack[SubmissionOptions]) -> SubmissionReply:
        deadline = time.monotonic() + timeout_s
        sub = await self.submit(source, task, wait_s=min(60.0, timeout_s), **fields)
        while not sub.finished_state and time.monotonic() < deadline:
            sub = await self.result(sub.id, wait_s=min(60.0, max(0.1, deadline - time.monotonic())))
        return sub

    async def evaluate_many(self, sources: Iterable[str | BatchItem], task: str | None = None, *,
                            timeout_s: float = 3600.0,
                            **fields: Unpack[SubmissionOptions]) -> list[SubmissionReply]:
        return await self.wait_batch(await self.submit_batch(sources, task, **fields), timeout_s)

    async def wait_batch(self, batch: BatchReply, timeout_s: float = 3600.0) -> list[SubmissionReply]:
        found = {s.id: s for s in batch.submissions if s.finished_state}
        if len(found) < len(batch.submissions):
            async for sub in self.stream(batch=batch.batch, timeout_s=timeout_s):
                found[sub.id] = sub
        return [found.get(i) or await self.result(i) for i in batch.ids]


__all__ = ["DEFAULT_RETRY_S", "DEFAULT_URL", "FINISHED", "TOKEN_ENV", "AsyncClient", "BatchReply", "Client",
           "ServeClientError", "SubmissionReply"]
