"""An OpenEnv environment (``openenv-core``, the ``openenv`` extra): ``reset(task=...)`` gives
the task's prompt as the optimizing agents build it, ``step(JaxbenchAction(source=...))``
returns the verdict, its message and the reward (:mod:`jaxbench.serve.rewards`).

``jaxbench serve`` mounts it at ``/openenv`` (its WebSocket at ``/openenv/ws``, OpenEnv's
HTTP routes beside it), where its steps go through the service's own queue, cache and run
directory as the caller ``openenv``. OpenEnv clients reach it with
:class:`JaxbenchEnvClient` (it sends the bearer token OpenEnv's own client does not):

    async with JaxbenchEnvClient("http://127.0.0.1:8000", token=TOKEN) as env:
        first = await env.reset(task="12p_rmsnorm", target="tpu")
        result = await env.step(JaxbenchAction(source=kernel_source))
        result.reward, result.observation.status, result.observation.message

An episode is ``max_steps`` kernels (default 1): it ends at the first ``correct`` verdict or
after the last step; each step's observation carries the previous verdict, so a policy can
refine. A completion with Markdown code fences is reduced to its kernel module first (as the
agents do). Without ``openenv-core`` this module still imports; :data:`AVAILABLE` is False and
nothing is mounted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jaxbench.agents.prompts import extract_code
from jaxbench.contract import Status
from jaxbench.serve import prompts
from jaxbench.serve.auth import Principal
from jaxbench.serve.config import Request
from jaxbench.serve.rewards import INTERPRET_NOTE
from jaxbench.serve.wire import SubmissionReply

if TYPE_CHECKING:
    from jaxbench.serve.service import Service

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import Action, Environment, Observation, State, create_fastapi_app
except ImportError:  # the openenv extra is not installed
    AVAILABLE = False
else:
    AVAILABLE = True

PRINCIPAL = Principal("openenv")
DEFAULT_TASK = "12p_rmsnorm"
STEP_TIMEOUT_S = 1800.0

# judge(request) -> the submission, finished (or as it is when the step's wait ran out)
Judge = Callable[[Request], SubmissionReply]


def kernel_of(text: str) -> str:
    """The kernel module in an action's text: the code block of an answer with Markdown
    fences, else the text itself."""
    return extract_code(text) if "```" in text or "~~~" in text else text


def message_of(sub: Any) -> str:
    """An observation's ``message``: the verdict's message, else the submission's error, else
    "" (a correct verdict has none), never None."""
    return str(getattr(sub, "message", None) or getattr(sub, "error", None) or "")


def service_judge(service: Service, principal: Principal = PRINCIPAL) -> Judge:
    """Steps judged by a :class:`~jaxbench.serve.service.Service` in this process."""

    def judge(request: Request) -> SubmissionReply:
        _, views = service.submit([request], principal)
        view = service.wait_sync(views[0]["id"], STEP_TIMEOUT_S)
        return SubmissionReply.from_view(view or views[0])

    return judge


def client_judge(url: str, token: str | None = None) -> Judge:
    """Steps judged by a ``jaxbench serve`` elsewhere, through :class:`jaxbench.serve.Client`
    (the evaluation's timeout is the service's default)."""
    from jaxbench.serve.client import Client

    client = Client(url, token=token)

    def judge(request: Request) -> SubmissionReply:
        return client.evaluate(request.source, request.task, timeout_s=STEP_TIMEOUT_S,
                               target=request.target, size=request.size, chip=request.chip,
                               mode=request.mode, trials=request.trials, id=request.id)

    return judge


if AVAILABLE:

    class JaxbenchAction(Action):
        """A kernel module's source (or an answer holding it in a code block)."""

        source: str

    class JaxbenchObservation(Observation):
        """After ``reset``: the prompt. After ``step``: the verdict (``status``, ``message``,
        ``result``: its ``evaluation`` event, which ``EvaluationResult.read`` reads), the reward
        (also in ``reward``) and ``reward_note`` in interpret mode."""

        task: str = ""
        target: str = "tpu"
        size: str = "small"
        mode: str | None = None
        prompt: str = ""
        status: str | None = None
        message: str = ""
        submission: str | None = None
        result: dict[str, Any] | None = None
        reward_detail: dict[str, Any] | None = None
        reward_note: str | None = None
        step: int = 0
        max_steps: int = 1

    class JaxbenchState(State):
        task: str = ""
        target: str = "tpu"
        size: str = "small"
        mode: str | None = None
        max_steps: int = 1
        best_status: str | None = None
        best_reward: float | None = None

    class JaxbenchEnvironment(Environment[JaxbenchAction, JaxbenchObservation, JaxbenchState]):
        """One task per episode; each step judges one kernel through ``judge``."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self, judge: Judge, default_task: str = DEFAULT_TASK,
                     default_mode: str | None = None) -> None:
            super().__init__()
            self._judge = judge
            self._default_task = default_task
            self._default_mode = default_mode
            self._state = JaxbenchState(episode_id=str(uuid.uuid4()), task=default_task)
            self._prompt = ""

        def reset(self, seed: int | None = None, episode_id: str | None = None,
                  task: str | None = None, target: str = "tpu", size: str = "small",
                  mode: str | None = None, max_steps: int = 1, **kwargs: Any) -> JaxbenchObservation:
            task = task or self._default_task
            mode = mode or self._default_mode
            prompt_mode = "device" if mode == "device" else "interpret"
            self._prompt = prompts.task_prompt(task, target, size, prompt_mode)
            self._state = JaxbenchState(episode_id=episode_id or str(uuid.uuid4()), step_count=0,
                                        task=task, target=target, size=size, mode=mode,
                                        max_steps=max(1, int(max_steps)))
            return JaxbenchObservation(task=task, target=target, size=size, mode=mode,
                                       prompt=self._prompt, max_steps=self._state.max_steps,
                                       reward_note=INTERPRET_NOTE if prompt_mode == "interpret" else None)

        def step(self, action: JaxbenchAction, timeout_s: float | None = None,
                 **kwargs: Any) -> JaxbenchObservation:
            state = self._state
            state.step_count += 1
            sub = self._judge(Request(task=state.task, source=kernel_of(action.source),
                                      target=state.target, size=state.size, mode=state.mode))
            value = sub.reward_value
            status = sub.status or sub.state
            if isinstance(value, (int, float)) and (state.best_reward is None or value > state.best_reward):
                state.best_reward, state.best_status = float(value), status
            done = status == Status.CORRECT or state.step_count >= state.max_steps
            return JaxbenchObservation(
                task=state.task, target=state.target, size=state.size, mode=sub.mode,
                prompt=self._prompt, status=status, message=message_of(sub),
                submission=sub.id, result=None if sub.result is None else sub.result.to_event(),
                reward_detail=None if sub.reward is None else dict(sub.reward),
                reward_note=None if sub.reward is None else sub.reward.get("note"),
                step=state.step_count, max_steps=state.max_steps,
                reward=value if isinstance(value, (int, float)) else 0.0, done=done)

        @property
        def state(self) -> JaxbenchState:
            return self._state

    class JaxbenchEnvClient(EnvClient[JaxbenchAction, JaxbenchObservation, JaxbenchState]):
        """OpenEnv's client for the environment a ``jaxbench serve`` mounts; ``url`` is the
        service's (``/openenv`` is added) and ``token`` its bearer token."""

        def __init__(self, url: str, token: str | None = None, **kwargs: Any) -> None:
            url = url.rstrip("/")
            super().__init__(url if url.endswith("/openenv") else url + "/openenv", **kwargs)
            self._token = token

        async def connect(self) -> JaxbenchEnvClient:
            if self._ws is not None:
                return self
            from websockets.asyncio.client import connect

            headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
            loopback = any(h in self._ws_url for h in ("//127.0.0.1", "//localhost", "//[::1]"))
            try:
                self._ws = await connect(self._ws_url, open_timeout=self._connect_timeout,
                                         max_size=self._max_message_size,
                                         additional_headers=headers,
                                         **({"proxy": None} if loopback else {}))
            except Exception as exc:  # noqa: BLE001 - OpenEnv's clients raise ConnectionError
                raise ConnectionError(f"cannot connect to {self._ws_url}: {exc}") from exc
            return self

        def _step_payload(self, action: JaxbenchAction) -> dict[str, str]:
            return {"source": action.source}

        def _parse_result(self, payload: dict[str, Any]) -> StepResult[JaxbenchObservation]:
            observation = JaxbenchObservation(**payload.get("observation", {}),
                                              reward=payload.get("reward"),
                                              done=payload.get("done", False))
            return StepResult(observation=observation, reward=payload.get("reward"),
                              done=payload.get("done", False))

        def _parse_state(self, payload: dict[str, Any]) -> JaxbenchState:
            return JaxbenchState(**payload)


def mount(app: Any, service: Service, path: str = "/openenv", max_sessions: int = 64) -> bool:
    """Mounts the environment, judged by ``service``, on ``app`` at ``path``; False (nothing
    mounted) without ``openenv-core``."""
    if not AVAILABLE:
        return False
    judge = service_judge(service)
    default_mode = service.config.default_mode if service.config.default_mode != "auto" else None
    sub = create_fastapi_app(lambda: JaxbenchEnvironment(judge, default_mode=default_mode),
                             JaxbenchAction, JaxbenchObservation, max_concurrent_envs=max_sessions)
    app.mount(path, sub)
    return True


__all__ = ["AVAILABLE", "DEFAULT_TASK", "PRINCIPAL", "client_judge", "kernel_of", "message_of",
           "mount", "service_judge"]
if AVAILABLE:
    __all__ += ["JaxbenchAction", "JaxbenchEnvClient", "JaxbenchEnvironment", "JaxbenchObservation",
                "JaxbenchState"]
