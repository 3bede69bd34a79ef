"""Python clients for ``jaxbench serve``: :class:`Client` (blocking) and :class:`AsyncClient`
(asyncio), both on ``httpx``.

Every submission carries an id the client draws (unless given), so a request retried after a
dropped connection, a 429 or a 503 is the same submission on the server, never a second
evaluation. Retries wait as ``Retry-After`` says (at most ``max_retry_wait_s`` each).

    from jaxbench.serve import Client
    with Client("http://127.0.0.1:8000", token=None) as judge:
        verdict = judge.evaluate(open("my_gemm.py").read(), "8p_gemm")
        print(verdict["status"], verdict["reward"]["value"], verdict["message"])
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import httpx

from jaxbench.contract import SubmissionState

TOKEN_ENV = "JAXBENCH_SERVE_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = (429, 502, 503, 504)
FINISHED = (SubmissionState.DONE, SubmissionState.FAILED)


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


def _submission(source: str, task: str | None, **fields: Any) -> dict[str, Any]:
    body = {"source": source, "task": task, **fields}
    body = {k: v for k, v in body.items() if v is not None}
    body.setdefault("id", uuid.uuid4().hex)
    return body


def _items(items: Iterable[str | dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        entry = {"source": item} if isinstance(item, str) else dict(item)
        entry.setdefault("id", uuid.uuid4().hex)
        out.append(entry)
    return out


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
                 retries: int = 5, max_retry_wait_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.retries = retries
        self.max_retry_wait_s = max_retry_wait_s
        self._http = self._HTTP(base_url=self.url, headers=_headers(token),
                                timeout=httpx.Timeout(timeout_s, connect=10.0), trust_env=False)


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
        error: ServeClientError | None = None
        for attempt in range(self.retries + 1):
            try:
                extra = dict(timeout=timeout_s + 30.0) if timeout_s else {}
                response = self._http.request(method, path, **kwargs, **extra)
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise ServeClientError(0, f"cannot reach {self.url}: {exc}") from exc
                time.sleep(_retry_wait(attempt, None, self.max_retry_wait_s))
                continue
            if response.status_code < 400:
                if response.headers.get("content-type", "").startswith("application/json"):
                    return response.json()
                return response.text
            error = _error(response)
            if response.status_code not in RETRY_STATUSES or attempt == self.retries:
                raise error
            time.sleep(_retry_wait(attempt, error, self.max_retry_wait_s))
        raise error or ServeClientError(0, "no answer")  # pragma: no cover

    # -- the service and its tasks --------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    def tasks(self, suite: str | None = None, prompts: bool = False, target: str = "tpu",
              size: str = "small", mode: str = "interpret") -> list[dict[str, Any]]:
        params = {"prompts": prompts, "target": target, "size": size, "mode": mode,
                  **({"suite": suite} if suite else {})}
        return self._call("GET", "/v1/tasks", params=params)

    def task(self, task_id: str, target: str = "tpu", size: str = "small",
             mode: str = "interpret") -> dict[str, Any]:
        return self._call("GET", f"/v1/tasks/{task_id}",
                          params={"target": target, "size": size, "mode": mode})

    def seed(self, task_id: str, target: str = "tpu") -> str:
        return self._call("GET", f"/v1/tasks/{task_id}/seed", params={"target": target})

    # -- submitting and reading ------------------------------------------------------------------
    def submit(self, source: str, task: str, *, wait_s: float = 0.0, **fields: Any) -> dict[str, Any]:
        """One kernel; fields: target, size, chip, mode, trials, timeout_s, id."""
        return self._call("POST", "/v1/submissions", json=_submission(source, task, **fields),
                          params={"wait": wait_s}, timeout_s=wait_s)

    def submit_batch(self, items: Iterable[str | dict[str, Any]], task: str | None = None, *,
                     wait_s: float = 0.0, **fields: Any) -> dict[str, Any]:
        """Kernels (sources, or dicts with their own fields) sharing the batch's fields."""
        body = {"items": _items(items), "task": task, **fields}
        body = {k: v for k, v in body.items() if v is not None}
        body.setdefault("id", uuid.uuid4().hex)
        return self._call("POST", "/v1/batches", json=body, params={"wait": wait_s}, timeout_s=wait_s)

    def result(self, sub_id: str, wait_s: float = 0.0) -> dict[str, Any]:
        return self._call("GET", f"/v1/submissions/{sub_id}", params={"wait": wait_s}, timeout_s=wait_s)

    def batch(self, batch_id: str, wait_s: float = 0.0) -> dict[str, Any]:
        return self._call("GET", f"/v1/batches/{batch_id}", params={"wait": wait_s}, timeout_s=wait_s)

    def stream(self, ids: list[str] | None = None, batch: str | None = None,
               timeout_s: float = 3600.0) -> Iterator[dict[str, Any]]:
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
                    yield json.loads(line)

    def evaluate(self, source: str, task: str, *, timeout_s: float = 3600.0,
                 **fields: Any) -> dict[str, Any]:
        """Submits one kernel and waits for its verdict (the finished submission)."""
        deadline = time.monotonic() + timeout_s
        view = self.submit(source, task, wait_s=min(60.0, timeout_s), **fields)
        while view["state"] not in FINISHED and time.monotonic() < deadline:
            view = self.result(view["id"], wait_s=min(60.0, max(0.1, deadline - time.monotonic())))
        return view

    def evaluate_many(self, sources: Iterable[str | dict[str, Any]], task: str | None = None, *,
                      timeout_s: float = 3600.0, **fields: Any) -> list[dict[str, Any]]:
        """A batch, waited for: the finished submissions in the order of ``sources``."""
        return self.wait_batch(self.submit_batch(sources, task, **fields), timeout_s)

    def wait_batch(self, batch: dict[str, Any], timeout_s: float = 3600.0) -> list[dict[str, Any]]:
        """The submissions of a submitted batch (``submit_batch``'s answer) once finished (or
        as they are after ``timeout_s``), in its order."""
        order = [s["id"] for s in batch["submissions"]]
        found = {s["id"]: s for s in batch["submissions"] if s["state"] in FINISHED}
        if len(found) < len(order):
            for view in self.stream(batch=batch["batch"], timeout_s=timeout_s):
                found[view["id"]] = view
        return [found.get(i) or self.result(i) for i in order]


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
        error: ServeClientError | None = None
        for attempt in range(self.retries + 1):
            try:
                extra = dict(timeout=timeout_s + 30.0) if timeout_s else {}
                response = await self._http.request(method, path, **kwargs, **extra)
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise ServeClientError(0, f"cannot reach {self.url}: {exc}") from exc
                await asyncio.sleep(_retry_wait(attempt, None, self.max_retry_wait_s))
                continue
            if response.status_code < 400:
                if response.headers.get("content-type", "").startswith("application/json"):
                    return response.json()
                return response.text
            error = _error(response)
            if response.status_code not in RETRY_STATUSES or attempt == self.retries:
                raise error
            await asyncio.sleep(_retry_wait(attempt, error, self.max_retry_wait_s))
        raise error or ServeClientError(0, "no answer")  # pragma: no cover

    async def health(self) -> dict[str, Any]:
        return await self._call("GET", "/v1/health")

    async def tasks(self, suite: str | None = None, prompts: bool = False, target: str = "tpu",
                    size: str = "small", mode: str = "interpret") -> list[dict[str, Any]]:
        params = {"prompts": prompts, "target": target, "size": size, "mode": mode,
                  **({"suite": suite} if suite else {})}
        return await self._call("GET", "/v1/tasks", params=params)

    async def task(self, task_id: str, target: str = "tpu", size: str = "small",
                   mode: str = "interpret") -> dict[str, Any]:
        return await self._call("GET", f"/v1/tasks/{task_id}",
                                params={"target": target, "size": size, "mode": mode})

    async def seed(self, task_id: str, target: str = "tpu") -> str:
        return await self._call("GET", f"/v1/tasks/{task_id}/seed", params={"target": target})

    async def submit(self, source: str, task: str, *, wait_s: float = 0.0, **fields: Any) -> dict[str, Any]:
        return await self._call("POST", "/v1/submissions", json=_submission(source, task, **fields),
                                params={"wait": wait_s}, timeout_s=wait_s)

    async def submit_batch(self, items: Iterable[str | dict[str, Any]], task: str | None = None, *,
                           wait_s: float = 0.0, **fields: Any) -> dict[str, Any]:
        body = {"items": _items(items), "task": task, **fields}
        body = {k: v for k, v in body.items() if v is not None}
        body.setdefault("id", uuid.uuid4().hex)
        return await self._call("POST", "/v1/batches", json=body, params={"wait": wait_s},
                                timeout_s=wait_s)

    async def result(self, sub_id: str, wait_s: float = 0.0) -> dict[str, Any]:
        return await self._call("GET", f"/v1/submissions/{sub_id}", params={"wait": wait_s},
                                timeout_s=wait_s)

    async def batch(self, batch_id: str, wait_s: float = 0.0) -> dict[str, Any]:
        return await self._call("GET", f"/v1/batches/{batch_id}", params={"wait": wait_s},
                                timeout_s=wait_s)

    async def stream(self, ids: list[str] | None = None, batch: str | None = None,
                     timeout_s: float = 3600.0) -> AsyncIterator[dict[str, Any]]:
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
                    yield json.loads(line)

    async def evaluate(self, source: str, task: str, *, timeout_s: float = 3600.0,
                       **fields: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        view = await self.submit(source, task, wait_s=min(60.0, timeout_s), **fields)
        while view["state"] not in FINISHED and time.monotonic() < deadline:
            view = await self.result(view["id"],
                                     wait_s=min(60.0, max(0.1, deadline - time.monotonic())))
        return view

    async def evaluate_many(self, sources: Iterable[str | dict[str, Any]], task: str | None = None, *,
                            timeout_s: float = 3600.0, **fields: Any) -> list[dict[str, Any]]:
        batch = await self.submit_batch(sources, task, **fields)
        order = [s["id"] for s in batch["submissions"]]
        found = {s["id"]: s for s in batch["submissions"] if s["state"] in FINISHED}
        if len(found) < len(order):
            async for view in self.stream(batch=batch["batch"], timeout_s=timeout_s):
                found[view["id"]] = view
        return [found.get(i) or await self.result(i) for i in order]


__all__ = ["DEFAULT_URL", "TOKEN_ENV", "AsyncClient", "Client", "ServeClientError"]
