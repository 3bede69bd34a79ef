"""The HTTP API (FastAPI): routes, the request guard (size limit, bearer tokens) and error
answers. Every route but ``/v1/health``, ``/metrics`` and the OpenAPI pages needs a token
when the service has any. The schema is served at ``/openapi.json`` (``/docs`` shows it).

Errors answer ``{"detail": "..."}`` with: 400 malformed JSON or a body that is not UTF-8
(naming the field that holds the bad byte), 401 no or wrong token, 404 unknown submission or
batch, 409 an id in use with other content, 413 a request or source over
its limit, 422 a request the evaluator cannot take (unknown task, size, chip or target, a
wrong field), 429 over the caller's quota or concurrency (``Retry-After``), 503 stopping.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, Query, Request, Security
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from jaxbench.contract import SubmissionState
from jaxbench.serve import prompts
from jaxbench.serve.auth import Authenticator, Principal
from jaxbench.serve.config import Request as EvalRequest
from jaxbench.serve.config import ServeError
from jaxbench.serve.ledger import SubmissionView
from jaxbench.serve.metrics import Metrics
from jaxbench.serve.service import Service
from jaxbench.serve.wire import FINISHED, TaskSummary

OPEN_PATHS = frozenset({"/v1/health", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect",
                        "/redoc"})
MAX_WAIT_S = 600.0
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# -- the guard: size limit and tokens, before any route (and before JSON is parsed) ----------------

class Guard:
    """ASGI middleware: refuses a request body over ``max_body_bytes`` (413, read no further:
    a 50 MB source never reaches the parser, let alone a tracer) and a request without a valid
    bearer token (401; WebSocket handshakes too, closed with 1008). The caller's principal goes
    to ``scope["state"]["principal"]``; each refusal is counted in ``metrics``."""

    def __init__(self, app: Any, auth: Authenticator, max_body_bytes: int,
                 metrics: Metrics) -> None:
        self.app = app
        self.auth = auth
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if path not in OPEN_PATHS:
            principal = self.auth.principal(headers.get("authorization"))
            if principal is None:
                self.metrics.refusal("401")
                if scope["type"] == "websocket":
                    await receive()  # websocket.connect
                    await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
                    return
                return await _answer(send, 401, "a valid bearer token is required "
                                                "(Authorization: Bearer TOKEN)",
                                     {"www-authenticate": "Bearer"})
            scope.setdefault("state", {})["principal"] = principal
        if scope["type"] == "websocket":
            async def closing(message: Message) -> None:
                try:
                    await send(message)
                except OSError:  # closing a socket the client already closed: nothing to do
                    if message.get("type") != "websocket.close":
                        raise

            return await self.app(scope, receive, closing)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            self.metrics.refusal("413")
            return await _answer(send, 413, f"request body of {declared} bytes is over the limit "
                                            f"of {self.max_body_bytes} bytes", {"connection": "close"})
        # read the body here, counting, so a chunked upload is cut off at the limit as well
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                self.metrics.refusal("413")
                return await _answer(send, 413, f"request body over the limit of "
                                                f"{self.max_body_bytes} bytes", {"connection": "close"})
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = not_utf8(body)
        if problem:  # JSON is UTF-8: say which field holds what, not "error parsing the body"
            self.metrics.refusal("400")
            return await _answer(send, 400, problem, {})
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def not_utf8(body: bytes) -> str | None:
    """Why a request body is not UTF-8 text (JSON must be), naming the field that holds the
    first bad byte where the body parses once that byte is set aside; None when it decodes."""
    try:
        body.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        byte, offset = body[exc.start], exc.start
    where = ""
    try:
        parsed = json.loads(body.decode("utf-8", errors="surrogateescape"))
    except ValueError:
        parsed = None
    stack: list[tuple[str, Any]] = [("", parsed)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack += [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{path}.{i}", v) for i, v in enumerate(value)]
        elif isinstance(value, str) and any("\udc80" <= c <= "\udcff" for c in value):
            where = f" in field {path!r}"
            break
    return (f"the request body is not UTF-8: byte 0x{byte:02x} at offset {offset}{where} "
            "(JSON must be UTF-8; a kernel source saved in another encoding, e.g. Latin-1, "
            "must be re-encoded as UTF-8 before it is sent)")


async def _answer(send: Send, status: int, message: str, headers: dict[str, str]) -> None:
    body = json.dumps({"detail": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


# -- the API's data ---------------------------------------------------------------------------------

class SubmissionIn(BaseModel):
    """One kernel for one task. ``id``: the caller's id for the submission (a retry with the
    same id and content is the same submission, never evaluated twice); drawn when absent."""

    model_config = ConfigDict(extra="forbid")
    task: str = Field(max_length=200, description="Task ID (GET /v1/tasks).")
    source: str = Field(description="The kernel module's source.")
    target: Literal["tpu", "gpu"] | None = Field(None, description="Default: the source's TARGET, else tpu.")
    size: str = Field("small", max_length=20)
    chip: str | None = Field(None, max_length=60, description="The chip to judge for (e.g. A100, v5e).")
    mode: Literal["auto", "interpret", "device"] | None = Field(None, description="Default: the service's.")
    trials: int = Field(3, ge=1, le=20)
    timeout_s: float | None = Field(None, gt=0, le=3600)
    id: str | None = Field(None, max_length=128)


class BatchItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str
    task: str | None = Field(None, max_length=200)
    target: Literal["tpu", "gpu"] | None = None
    size: str | None = Field(None, max_length=20)
    chip: str | None = Field(None, max_length=60)
    mode: Literal["auto", "interpret", "device"] | None = None
    trials: int | None = Field(None, ge=1, le=20)
    timeout_s: float | None = Field(None, gt=0, le=3600)
    id: str | None = Field(None, max_length=128)


class BatchIn(BaseModel):
    """Kernels for (task, target, size, chip, mode): the batch's fields apply to every item
    that does not set its own."""

    model_config = ConfigDict(extra="forbid")
    items: list[BatchItem] = Field(min_length=1)
    task: str | None = Field(None, max_length=200)
    target: Literal["tpu", "gpu"] | None = None
    size: str = Field("small", max_length=20)
    chip: str | None = Field(None, max_length=60)
    mode: Literal["auto", "interpret", "device"] | None = None
    trials: int = Field(3, ge=1, le=20)
    timeout_s: float | None = Field(None, gt=0, le=3600)
    id: str | None = Field(None, max_length=128)


class SubmissionOut(BaseModel):
    """A submission: ``state`` queued, running, done (``status``, ``message``, ``result``,
    ``reward``) or failed (``error``: no verdict). ``reward.note`` says when only correctness
    is rewarded (interpret mode). Answered with the fields that are unset left out."""

    model_config = ConfigDict(extra="allow")
    id: str
    state: SubmissionState
    task: str
    target: str
    size: str
    chip: str | None = None
    mode: str
    trials: int
    batch: str | None = None
    source_sha256: str
    created: float
    finished: float | None = None
    cached_from: str | None = None
    duplicate: bool | None = None
    status: str | None = None
    message: str | None = None
    result: dict[str, Any] | None = Field(
        None, description="The verdict's `evaluation` event (docs/design.md, \"The evaluation "
                          "result\"): `EvaluationResult.read` reads it.")
    reward: dict[str, Any] | None = Field(
        None, description="`value`, `correctness`, `speedup_term`, `basis`, `note`? (docs/serve.md, "
                          "\"Rewards\"); before a verdict in interpret mode `value` is null.")
    error: str | None = None

    @classmethod
    def of(cls, view: SubmissionView) -> SubmissionOut:
        """The service's view of a submission as the API answers it: the result as its event."""
        result = view.get("result")
        return cls.model_validate({**view, "result": None if result is None else result.to_event()})


class BatchOut(BaseModel):
    batch: str
    done: bool
    submissions: list[SubmissionOut]


class HealthOut(BaseModel):
    """The service's state at a glance and the latency quantiles (seconds from submission to
    verdict; null before any)."""

    status: Literal["ok"]
    queue_length: int
    in_flight: int
    submissions: int
    workers: int
    executor: str
    stopping: bool
    latency: dict[str, float | None]


class TaskOut(BaseModel):
    """A task: identity, sizes, the targets it ships seed kernels for, tolerances, and its
    prompt where asked for."""

    id: str
    suite: str
    description: str
    sizes: list[str]
    targets: list[str]
    atol: int | float
    rtol: int | float
    prompt: str | None = None


def create_app(service: Service, auth: Authenticator, *, max_body_bytes: int | None = None,
               openenv: bool = True, manage_service: bool = True,
               on_stopped: Callable[[], None] | None = None) -> FastAPI:
    """The API in front of ``service``; with ``manage_service``, the app starts and stops it
    (its lifespan), then calls ``on_stopped``. ``openenv`` mounts the OpenEnv environment at ``/openenv`` when
    ``openenv-core`` is installed."""
    bearer = HTTPBearer(auto_error=False, description="A token of the service's tokens file")
    limit = max_body_bytes or max(1 << 20, 2 * service.config.max_source_bytes + (64 << 10))
    app = FastAPI(title="jaxbench judge", version="1",
                  lifespan=_lifespan(service, manage_service, on_stopped),
                  description="Pallas kernels judged by jaxbench's evaluator: submit kernels, "
                              "read and stream verdicts and rewards (docs/serve.md).")
    app.add_middleware(Guard, auth=auth, max_body_bytes=limit, metrics=service.metrics)
    secured = [Security(bearer)]
    _add_error_handlers(app, service)
    _add_service_routes(app, service)
    _add_task_routes(app, secured)
    _add_submission_routes(app, service, secured)
    _add_stream_routes(app, service, secured)
    if openenv:
        from jaxbench.serve import environment

        mounted = environment.mount(app, service)
        app.state.openenv = mounted
    return app


def _lifespan(service: Service, manage_service: bool,
              on_stopped: Callable[[], None] | None = None) -> Callable[[FastAPI], Any]:
    """The app's lifespan: starts and stops ``service`` when the app manages it (then calls
    ``on_stopped``)."""
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if manage_service:
            await run_in_threadpool(service.start)
        try:
            yield
        finally:
            if manage_service:
                await run_in_threadpool(service.stop)
                if on_stopped is not None:
                    on_stopped()

    return lifespan


def _add_error_handlers(app: FastAPI, service: Service) -> None:
    """Refusals (ServeError) and invalid requests answer ``{"detail": ...}``, counted."""
    @app.exception_handler(ServeError)
    async def serve_error(request: Request, exc: ServeError) -> JSONResponse:
        if exc.status in (401, 404, 409, 413, 422):
            service.metrics.refusal(str(exc.status))
        return JSONResponse({"detail": exc.message}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            service.metrics.refusal("400")
            return JSONResponse({"detail": "malformed JSON: " + "; ".join(
                str(e.get("ctx", {}).get("error", e.get("msg"))) for e in errors)}, status_code=400)
        service.metrics.refusal("422")
        shown = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg')}"
                          for e in errors[:10])
        return JSONResponse({"detail": shown, "errors": json.loads(json.dumps(errors[:10], default=str))},
                            status_code=422)


def principal_of(request: Request) -> Principal:
    """The caller the guard authenticated (anonymous when the service has no tokens)."""
    return request.scope.get("state", {}).get("principal") or Principal("anonymous")


# -- the service's own routes: health and metrics (open) -------------------------------------------

def _add_service_routes(app: FastAPI, service: Service) -> None:
    @app.get("/v1/health", tags=["service"])
    async def health() -> HealthOut:
        return HealthOut(status="ok", **service.status(),
                         latency=service.metrics.latency_quantiles())

    @app.get("/metrics", tags=["service"], response_class=PlainTextResponse)
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(service.render_metrics(),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")


# -- the tasks: listing, prompts, seed kernels -----------------------------------------------------

def _add_task_routes(app: FastAPI, secured: list[Any]) -> None:
    # a task's prompt is left out where it was not asked for (exclude_unset)
    @app.get("/v1/tasks", tags=["tasks"], dependencies=secured, response_model=list[TaskOut],
             response_model_exclude_unset=True)
    async def list_tasks(suite: str | None = None, prompts_: bool = Query(False, alias="prompts"),
                         target: Literal["tpu", "gpu"] = "tpu", size: str = "small",
                         mode: Literal["interpret", "device"] = "interpret") -> list[TaskSummary]:
        return await run_in_threadpool(_task_list, suite, prompts_, target, size, mode)

    @app.get("/v1/tasks/{task_id}", tags=["tasks"], dependencies=secured, response_model=TaskOut,
             response_model_exclude_unset=True)
    async def get_task(task_id: str, target: Literal["tpu", "gpu"] = "tpu", size: str = "small",
                       mode: Literal["interpret", "device"] = "interpret",
                       prompt_mode: str = "default") -> TaskSummary:
        return await run_in_threadpool(_task_entry, task_id, target, size, mode, prompt_mode)

    @app.get("/v1/tasks/{task_id}/seed", tags=["tasks"], dependencies=secured,
             response_class=PlainTextResponse)
    async def get_seed(task_id: str, target: Literal["tpu", "gpu"] = "tpu") -> PlainTextResponse:
        try:
            source = await run_in_threadpool(prompts.seed_source, task_id, target)
        except KeyError as exc:
            raise ServeError(404, str(exc).strip("'\"")) from None
        if source is None:
            raise ServeError(404, f"{task_id} ships no {target} seed kernel")
        return PlainTextResponse(source, media_type="text/x-python")


def _task_list(suite: str | None, with_prompts: bool, target: str, size: str,
               mode: str) -> list[TaskSummary]:
    try:
        found = prompts.tasks(suite)
    except KeyError as exc:
        raise ServeError(422, str(exc).strip("'\"")) from None
    out = []
    for task in found:
        entry = prompts.task_summary(task)
        if with_prompts and size in task.sizes:
            entry["prompt"] = prompts.task_prompt(task.id, target, size, mode)
        out.append(entry)
    return out


def _task_entry(task_id: str, target: str, size: str, mode: str, prompt_mode: str) -> TaskSummary:
    """A task's summary and prompt: 404 for an unknown task, 422 for unknown settings."""
    from jaxbench.tasks import UnknownTaskError
    from jaxbench.tasks import get_task as lookup

    try:
        entry = prompts.task_summary(lookup(task_id))
        entry["prompt"] = prompts.task_prompt(task_id, target, size, mode, prompt_mode)
    except (KeyError, ValueError) as exc:
        status = 404 if isinstance(exc, UnknownTaskError) else 422
        raise ServeError(status, str(exc).strip("'\"")) from None
    return entry


# -- submitting and reading submissions and batches ------------------------------------------------

def _submission_out(service: Service, sub_id: str, principal: Principal) -> SubmissionOut:
    return SubmissionOut.of(service.get(sub_id, principal))


def _batch_out(service: Service, batch: str, ids: list[str], principal: Principal) -> BatchOut:
    subs = [_submission_out(service, i, principal) for i in ids]
    return BatchOut(batch=batch, done=all(s.state in FINISHED for s in subs), submissions=subs)


async def _wait_all(service: Service, ids: list[str], wait: float) -> None:
    if wait > 0:
        await asyncio.gather(*(service.wait(i, min(wait, MAX_WAIT_S)) for i in ids))


def _batch_requests(body: BatchIn) -> list[EvalRequest]:
    """A batch's items as requests, the batch's fields filling what an item leaves unset."""
    shared = body.model_dump(exclude={"items", "id"})
    requests = []
    for index, item in enumerate(body.items):
        fields = {**shared, **{k: v for k, v in item.model_dump().items() if v is not None}}
        if not fields.get("task"):
            raise ServeError(422, f"items.{index}: no task (set the batch's or the item's)")
        requests.append(EvalRequest(**fields))
    return requests


def _add_submission_routes(app: FastAPI, service: Service, secured: list[Any]) -> None:
    @app.post("/v1/submissions", tags=["submissions"], dependencies=secured, status_code=202,
              response_model=SubmissionOut, response_model_exclude_none=True,
              responses={200: {"description": "already known (a retry) or answered from the cache"}})
    async def submit(body: SubmissionIn, request: Request,
                     wait: float = Query(0.0, ge=0, le=MAX_WAIT_S,
                                         description="Seconds to wait for the verdict.")) -> JSONResponse:
        principal = principal_of(request)
        fields = body.model_dump()
        key = request.headers.get("idempotency-key")
        if key and not fields.get("id"):
            fields["id"] = key
        _, views = await run_in_threadpool(service.submit, [EvalRequest(**fields)], principal)
        await _wait_all(service, [views[0]["id"]], wait)
        view = service.get(views[0]["id"], principal)
        if views[0].get("duplicate"):
            view["duplicate"] = True
        waiting = view["state"] in (SubmissionState.QUEUED, SubmissionState.RUNNING)
        code = 202 if waiting and not view.get("duplicate") else 200
        return JSONResponse(SubmissionOut.of(view).model_dump(exclude_none=True), status_code=code)

    @app.post("/v1/batches", tags=["submissions"], dependencies=secured, status_code=202,
              response_model=BatchOut, response_model_exclude_none=True)
    async def submit_batch(body: BatchIn, request: Request,
                           wait: float = Query(0.0, ge=0, le=MAX_WAIT_S)) -> JSONResponse:
        principal = principal_of(request)
        requests = _batch_requests(body)
        batch, views = await run_in_threadpool(service.submit, requests, principal, body.id, True)
        ids = [v["id"] for v in views]
        await _wait_all(service, ids, wait)
        return JSONResponse(_batch_out(service, batch or "", ids, principal).model_dump(exclude_none=True),
                            status_code=202)

    @app.get("/v1/submissions/{sub_id}", tags=["submissions"], dependencies=secured,
             response_model=SubmissionOut, response_model_exclude_none=True)
    async def get_submission(sub_id: str, request: Request,
                             wait: float = Query(0.0, ge=0, le=MAX_WAIT_S)) -> SubmissionOut:
        principal = principal_of(request)
        service.get(sub_id, principal)
        await _wait_all(service, [sub_id], wait)
        return _submission_out(service, sub_id, principal)

    @app.get("/v1/batches/{batch_id}", tags=["submissions"], dependencies=secured,
             response_model=BatchOut, response_model_exclude_none=True)
    async def get_batch(batch_id: str, request: Request,
                        wait: float = Query(0.0, ge=0, le=MAX_WAIT_S)) -> BatchOut:
        principal = principal_of(request)
        ids = service.batch(batch_id, principal)
        await _wait_all(service, ids, wait)
        return _batch_out(service, batch_id, ids, principal)


# -- streaming verdicts as they come ---------------------------------------------------------------

NDJSON = {200: {"content": {"application/x-ndjson": {}},
                "description": "One submission (as JSON) per line, as each finishes."}}


async def _stream(service: Service, ids: list[str], principal: Principal,
                  timeout_s: float) -> AsyncIterator[bytes]:
    """Each submission as a JSON line as it finishes; at ``timeout_s``, those left as they are."""
    deadline = time.monotonic() + timeout_s
    tasks = {asyncio.ensure_future(service.wait(i, timeout_s)): i for i in ids}
    try:
        while tasks:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done, _ = await asyncio.wait(tasks, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                sub_id = tasks.pop(finished)
                if service.finished(sub_id):
                    yield _line(_submission_out(service, sub_id, principal))
                else:  # woken without a verdict (its wait timed out): wait again
                    tasks[asyncio.ensure_future(service.wait(sub_id, max(0.1, left)))] = sub_id
    finally:
        for task in tasks:
            task.cancel()
    for sub_id in tasks.values():  # out of time: their current state
        yield _line(_submission_out(service, sub_id, principal))


def _line(sub: SubmissionOut) -> bytes:
    return (json.dumps(sub.model_dump(exclude_none=True)) + "\n").encode()


def _add_stream_routes(app: FastAPI, service: Service, secured: list[Any]) -> None:
    @app.get("/v1/batches/{batch_id}/stream", tags=["submissions"], dependencies=secured,
             responses=NDJSON)
    async def stream_batch(batch_id: str, request: Request,
                           timeout: float = Query(3600.0, gt=0, le=86400)) -> StreamingResponse:
        principal = principal_of(request)
        ids = service.batch(batch_id, principal)
        return StreamingResponse(_stream(service, ids, principal, timeout),
                                 media_type="application/x-ndjson")

    @app.get("/v1/stream", tags=["submissions"], dependencies=secured, responses=NDJSON)
    async def stream_ids(request: Request, ids: str = Query(description="Comma-separated ids."),
                         timeout: float = Query(3600.0, gt=0, le=86400)) -> StreamingResponse:
        principal = principal_of(request)
        wanted = [i for i in ids.split(",") if i]
        service.check_ids(wanted, principal)
        return StreamingResponse(_stream(service, wanted, principal, timeout),
                                 media_type="application/x-ndjson")


__all__ = ["BatchIn", "BatchItem", "BatchOut", "Guard", "HealthOut", "SubmissionIn", "SubmissionOut",
           "TaskOut", "create_app"]
