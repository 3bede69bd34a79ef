"""A reward a trainer can live with (issue 57, item 2): what ``KernelReward`` gives a
completion the judge has not answered (nothing to learn from: left out, counted, warned about),
an unreachable or restarting service (retried, never an exception out of training), answers the
service refuses (that item's reward alone), the default table's order (junk never above an
answer that runs) and the outcomes it logs through the trainer's hooks. A real
``jaxbench serve`` on loopback, except where a fake clock stands in for minutes of downtime."""

from __future__ import annotations

import socket
import threading
import time
import uuid
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from serve_helpers import GEMM_SEED, NORM_SEED, REPO, Server, events, variant  # noqa: E402

from jaxbench.contract import STATUSES  # noqa: E402
from jaxbench.serve.rewards import DEFAULT_STATUS_REWARDS, reward  # noqa: E402

NORM, GEMM = "12p_rmsnorm", "8p_gemm"
MAX_SOURCE = 8192
PLAIN_JAX = (REPO / "tests/kernels/plain_jnp.py").read_text()


def answer(source: str) -> str:
    return f"Here is the kernel.\n```python\n{source}```\n"


def fresh(path) -> str:
    """A seed kernel no earlier submission shares (so no cached verdict: a real evaluation)."""
    return variant(path, uuid.uuid4().hex)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    service = Server(tmp_path_factory.mktemp("judge") / "run", "--workers", "2",
                     "--max-source-bytes", str(MAX_SOURCE))
    yield service
    service.stop()


def kernel_reward(server, **options):
    from jaxbench.serve import KernelReward

    return KernelReward(server.url, **options)


# -- an un-judged completion: left out of the group, counted, warned about ---------------------------

def test_a_completion_not_judged_in_time_is_left_out_counted_and_warned_about(server):
    seed = answer(NORM_SEED.read_text())
    assert kernel_reward(server, task=NORM)([seed]) == [1.0]  # judged once: now in the verdict cache
    reward = kernel_reward(server, task=NORM, timeout_s=0.3)
    with pytest.warns(RuntimeWarning, match=r"1 of 2 completions got no verdict.*left out"):
        rewards = reward([seed, answer(fresh(NORM_SEED))])
    # the first is answered from the verdict cache at once; the second is a new kernel still
    # being evaluated: None, which TRL reads as NaN and leaves out of the group's baseline
    assert rewards == [1.0, None], rewards
    assert reward.last_statuses[1] == "unjudged" and reward.unjudged == 1
    assert reward.outcomes["unjudged"] == 1


def test_failure_reward_scores_an_unjudged_completion_when_asked_and_still_counts_it(server):
    from jaxbench.serve.trainer import UnjudgedWarning

    reward = kernel_reward(server, task=NORM, timeout_s=0.3, failure_reward=-0.1)
    with pytest.warns(UnjudgedWarning, match="failure_reward=-0.1"):
        assert reward([answer(fresh(NORM_SEED))]) == [-0.1]
    assert reward.unjudged == 1 and reward.last_statuses == ["unjudged"]


# -- an unreachable or restarting service ------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_service_leaves_the_batch_unjudged_instead_of_raising():
    from jaxbench.serve import KernelReward

    reward = KernelReward(f"http://127.0.0.1:{free_port()}", task=NORM, retry_s=1.0)
    started = time.monotonic()
    with pytest.warns(RuntimeWarning, match="2 of 2 completions got no verdict.*cannot reach"):
        assert reward([answer("x = 1\n"), "nothing"]) == [None, None]
    assert time.monotonic() - started < 30
    assert reward.unjudged == 2


def mock_http(handler) -> httpx.Client:
    """The client's HTTP connection, answered by ``handler`` instead of a service."""
    return httpx.Client(base_url="http://judge.invalid", transport=httpx.MockTransport(handler))


class FakeClock:
    """time.monotonic and time.sleep for the client: minutes of retries in no time."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_client_retries_a_service_that_is_down_for_minutes(monkeypatch):
    """A restart of the service (it resumes its queue) takes tens of seconds, more on a loaded
    host: the client keeps retrying for ``retry_s`` (default 300 s), not for five tries
    (15 s), then says since when it could not reach it."""
    from jaxbench.serve import client as client_module
    from jaxbench.serve.client import DEFAULT_RETRY_S, Client, ServeClientError

    clock = FakeClock()
    monkeypatch.setattr(client_module, "time", clock)
    tries = []

    def handler(request: httpx.Request) -> httpx.Response:
        tries.append(clock.now)
        if clock.now < 120.0:  # down for two minutes
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"status": "ok"})

    judge = Client("http://judge.invalid")
    judge._http = mock_http(handler)
    assert DEFAULT_RETRY_S >= 120
    assert judge.health() == {"status": "ok"}
    assert len(tries) > 6 and all(b - a <= 30.0 for a, b in zip(tries, tries[1:], strict=False))

    clock.now, tries[:] = 0.0, []
    short = Client("http://judge.invalid", retry_s=60.0)
    short._http = mock_http(handler)
    with pytest.raises(ServeClientError, match=r"cannot reach .*retried for 60 s") as refused:
        short.health()
    assert refused.value.status == 0 and 59.0 <= clock.now <= 61.0
    clock.now, tries[:] = 0.0, []
    none = Client("http://judge.invalid", retries=0)
    none._http = mock_http(handler)
    with pytest.raises(ServeClientError):
        none.health()
    assert tries == [0.0]  # retries=0: one try, as before


def test_a_restart_of_the_service_mid_call_does_not_end_the_call(tmp_path):
    """The service is SIGKILLed while the reward function waits for its verdicts and started
    again on the same port and run directory: it resumes the queue, the stream is opened
    again, and the call returns the verdicts (no exception out of the trainer)."""
    from jaxbench.serve import KernelReward

    port, out = free_port(), tmp_path / "run"
    first = Server(out, "--workers", "1", "--port", str(port))
    reward = KernelReward(f"http://127.0.0.1:{port}", task=NORM)  # retries for 300 s by default
    got: dict[str, object] = {}

    def call() -> None:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got["rewards"] = reward([answer(fresh(NORM_SEED)), answer(fresh(NORM_SEED))])
            got["warnings"] = [str(w.message) for w in caught]
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            got["error"] = exc

    caller = threading.Thread(target=call)
    second = None
    try:
        caller.start()
        deadline = time.monotonic() + 120
        while sum(e["type"] == "serve_submission" for e in events(out)) < 2:
            assert time.monotonic() < deadline, first.log()
            time.sleep(0.05)
        first.kill()  # SIGKILL: no clean stop; the call is waiting on the stream
        time.sleep(1.0)
        second = Server(out, "--workers", "1", "--port", str(port))
        caller.join(300)
        assert not caller.is_alive()
    finally:
        first.kill()
        if second is not None:
            second.stop()
    assert "error" not in got, got
    assert got["rewards"] == [1.0, 1.0], got
    assert reward.unjudged == 0 and reward.last_statuses == ["correct", "correct"]


# -- refusals: that item's reward, never an exception for the batch ----------------------------------

def test_items_the_service_refuses_earn_refused_reward_and_the_rest_are_judged(server):
    from jaxbench.serve.trainer import REFUSED_REWARD

    reward = kernel_reward(server)
    seed = NORM_SEED.read_text()
    oversized = seed + "\n# " + "x" * (MAX_SOURCE + 100) + "\n"
    completions = [answer(seed),  # judged
                   answer(oversized),  # 413: over --max-source-bytes
                   answer(seed),  # 422: an unknown task
                   answer(seed + "\n# \ud800 lone surrogate\n"),  # not UTF-8 text
                   answer(seed + "\n# NUL \x00\n"),  # 422: a NUL character
                   answer(GEMM_SEED.read_text())]  # judged
    tasks = [NORM, NORM, "99x_no_such_task", NORM, NORM, GEMM]
    with pytest.warns(UserWarning, match="refused 4 of 6 answers"):
        rewards = reward(completions, task=tasks)
    assert rewards == [1.0, REFUSED_REWARD, REFUSED_REWARD, REFUSED_REWARD, REFUSED_REWARD, 1.0]
    assert reward.last_statuses == ["correct", "refused", "refused", "refused", "refused", "correct"]
    assert reward.refused == 4 and reward.unjudged == 0
    assert REFUSED_REWARD <= DEFAULT_STATUS_REWARDS["compile_error"]


def test_a_wrong_token_is_still_an_error():
    """A refusal of the caller, not of an item (401: a wrong token), cannot be scored: it stays
    an exception, at once (no retries)."""
    from jaxbench.serve import KernelReward, ServeClientError

    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(401, json={"detail": "a wrong token"})

    reward = KernelReward("http://judge.invalid", token="wrong", task=NORM)
    reward.client._http = mock_http(handler)
    with pytest.raises(ServeClientError, match="401"):
        reward([answer("x = 1\n")])
    assert calls == ["/v1/batches"]


# -- the reward table's order ------------------------------------------------------------------------

def test_no_answer_that_fails_to_compile_earns_more_than_one_that_runs():
    def value(status: str) -> float:
        return reward({"status": status, "mode": "interpret"})["value"]

    ladder = [("rejected",), ("compile_error",), ("no_pallas",), ("runtime_error", "timeout"),
              ("incorrect", "unverified", "crashed"), ("correct",)]
    assert {s for rung in ladder for s in rung} == set(STATUSES)
    for lower, higher in zip(ladder, ladder[1:], strict=False):
        assert max(value(s) for s in lower) < min(value(s) for s in higher), (lower, higher)


def test_junk_earns_less_than_plain_jax_through_the_service(server):
    reward = kernel_reward(server, task=GEMM)
    junk = ["no code at all, just words", "```python\ndef kernel(a, b:\n```", "```python\n```"]
    rewards = reward([*junk, answer(PLAIN_JAX)])
    assert max(rewards[:-1]) < rewards[-1] < 0.0, rewards
    statuses = reward.last_statuses
    assert statuses[-1] == "no_pallas", statuses
    assert all(s == "compile_error" for s in statuses[:-1]), statuses


# -- what the trainer logs ---------------------------------------------------------------------------

def test_each_calls_outcomes_go_to_the_trainers_hooks(server):
    metrics: dict[str, list[float]] = {}
    columns: dict[str, list] = {}
    reward = kernel_reward(server, task=NORM)
    rewards = reward([answer(NORM_SEED.read_text()), "no code", "x" * 10], prompts=["p"] * 3,
                     task=[NORM] * 3, completion_ids=[[1]] * 3, trainer_state=object(),
                     log_metric=lambda name, v: metrics.setdefault(name, []).append(v),
                     log_extra=lambda name, values: columns.setdefault(name, []).extend(values))
    assert rewards[0] == 1.0
    assert columns == {"jaxbench_status": ["correct", "compile_error", "compile_error"]}
    assert metrics["jaxbench/correct"] == [pytest.approx(1 / 3)]
    assert metrics["jaxbench/compile_error"] == [pytest.approx(2 / 3)]
    assert metrics["jaxbench/unjudged"] == [0.0] and metrics["jaxbench/refused"] == [0.0]
    assert set(metrics) == {f"jaxbench/{s}" for s in [*STATUSES, "unjudged", "refused"]}


def test_a_dataset_without_a_task_column_says_what_it_has(server):
    reward = kernel_reward(server)
    with pytest.raises(ValueError, match=r"needs a `task` column .*task_id"):
        reward(["x"], prompts=["p"], task_id=[NORM], log_metric=print)
