"""The service's core without a server or a real evaluator: one owner of the state
(:class:`jaxbench.serve.state.ServiceState`), the workers, waiting, retries, stopping, many
threads at once, the verdict kept as its :class:`~jaxbench.contract.EvaluationResult` (in the
run directory through its event, read back on a restart), and the JSON the API answers for it
(the app in this process). A stand-in evaluator answers at once, or when a test lets it."""

from __future__ import annotations

import ast
import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from jaxbench.contract import EvaluationResult
from jaxbench.serve.auth import Principal
from jaxbench.serve.config import Request, ServeConfig, ServeError
from jaxbench.serve.service import Service
from jaxbench.serve.store import VERDICT_KEYS

SERVE = Path(__file__).resolve().parents[1] / "src/jaxbench/serve"
NORM = "12p_rmsnorm"
SOURCE = (Path(__file__).resolve().parents[1]
          / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py").read_text()
ALICE, BOB = Principal("alice"), Principal("bob")


class StandIn:
    """An evaluator: ``evaluate`` answers ``correct`` (or raises ``fail_first`` times), after
    ``gate`` is set; it counts its calls and whether it was aborted or closed. ``fields``: more
    of the result's fields (or its keys, when ``as_dict``: an evaluator of the wrong kind)."""

    def __init__(self, fail_first: int = 0, gate: threading.Event | None = None,
                 as_dict: bool = False, **fields) -> None:  # noqa: ANN003
        self.fail_first = fail_first
        self.gate = gate
        self.as_dict = as_dict
        self.fields = fields
        self.calls: list[str] = []
        self.aborted = self.closed = False
        self._lock = threading.Lock()

    def evaluate(self, source_or_path, task_id, settings=None):  # noqa: ANN001, ANN201
        with self._lock:
            self.calls.append(source_or_path)
            failing = len(self.calls) <= self.fail_first
        if self.gate is not None:
            self.gate.wait(30)
        if self.aborted:
            raise RuntimeError("aborted")
        if failing:
            raise RuntimeError("the harness broke")
        result = EvaluationResult(task=task_id, target=settings.target, mode=settings.mode,
                                  size=settings.size, status="correct", message="ok",
                                  kernel_file="<kernel>", **self.fields)
        return result.to_event() if self.as_dict else result

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.closed = True


def variant(n: int) -> str:
    return SOURCE + f"\n# variant {n}\n"


@pytest.fixture
def service_of(tmp_path):
    made: list[Service] = []

    def make(evaluator: StandIn, **options) -> Service:  # noqa: ANN003
        config = ServeConfig(out=tmp_path / f"serve{len(made)}", default_mode="interpret",
                             **options)
        service = Service(config, evaluator=evaluator)
        service.start()
        made.append(service)
        return service

    yield make
    for service in made:
        service.stop(grace_s=5)


def test_a_verdict_wakes_blocked_and_async_waiters_and_a_late_waiter_returns_at_once(service_of):
    gate = threading.Event()
    service = service_of(StandIn(gate=gate), workers=1)
    _, views = service.submit([Request(task=NORM, source=variant(0))], ALICE)
    sub_id = views[0]["id"]
    assert views[0]["state"] == "queued"

    blocked: list[object] = []
    thread = threading.Thread(target=lambda: blocked.append(service.wait_sync(sub_id, 30)))
    thread.start()

    async def wait_async() -> float:
        started = time.monotonic()
        await service.wait(sub_id, 30)
        return time.monotonic() - started

    async def both() -> float:
        waiting = asyncio.ensure_future(wait_async())
        await asyncio.sleep(0.2)
        assert not waiting.done()
        gate.set()
        return await waiting

    assert asyncio.run(both()) < 10
    thread.join(10)
    assert blocked and blocked[0]["state"] == "done" and blocked[0]["status"] == "correct"
    assert service.finished(sub_id)
    started = time.monotonic()
    asyncio.run(service.wait(sub_id, 30))  # finished already: no waiting
    assert service.wait_sync(sub_id, 30)["reward"]["value"] == 1.0
    assert time.monotonic() - started < 5
    assert service.wait_sync("no-such-id", 1) is None


def test_a_wait_times_out_and_leaves_no_waiter_behind(service_of):
    gate = threading.Event()
    service = service_of(StandIn(gate=gate), workers=1)
    _, views = service.submit([Request(task=NORM, source=variant(1))], ALICE)
    sub_id = views[0]["id"]
    assert service.wait_sync(sub_id, 0.2)["state"] in ("queued", "running")
    asyncio.run(service.wait(sub_id, 0.2))
    assert service._state._waiters._waiting == {}
    gate.set()
    assert service.wait_sync(sub_id, 30)["state"] == "done"


def test_the_same_kernel_is_evaluated_once_and_followers_get_its_verdict(service_of):
    gate = threading.Event()
    evaluator = StandIn(gate=gate)
    service = service_of(evaluator, workers=2)
    _, first = service.submit([Request(task=NORM, source=variant(2))], ALICE)
    _, second = service.submit([Request(task=NORM, source=variant(2))], BOB)
    gate.set()
    done = [service.wait_sync(v[0]["id"], 30) for v in (first, second)]
    assert [d["state"] for d in done] == ["done", "done"]
    assert done[1]["cached_from"] == first[0]["id"]
    assert len(evaluator.calls) == 1


def test_a_harness_error_is_retried_then_fails_and_a_follower_gets_its_own_evaluation(service_of):
    evaluator = StandIn(fail_first=2, gate=threading.Event())
    service = service_of(evaluator, workers=1, retries=1)
    _, first = service.submit([Request(task=NORM, source=variant(3))], ALICE)
    _, second = service.submit([Request(task=NORM, source=variant(3))], BOB)
    evaluator.gate.set()
    failed = service.wait_sync(first[0]["id"], 30)
    assert failed["state"] == "failed" and "the harness broke" in failed["error"]
    followed = service.wait_sync(second[0]["id"], 30)
    assert followed["state"] == "done" and followed["cached_from"] is None
    assert len(evaluator.calls) == 3  # two attempts of the first, one of the follower
    assert service.status()["queue_length"] == 0 and service.unfinished() == 0


def test_a_retried_id_is_a_duplicate_and_another_kernel_under_it_is_refused(service_of):
    service = service_of(StandIn(), workers=1)
    request = Request(task=NORM, source=variant(4), id="k1")
    _, views = service.submit([request], ALICE)
    _, again = service.submit([request], ALICE)
    assert again[0]["duplicate"] is True and again[0]["id"] == views[0]["id"] == "k1"
    with pytest.raises(ServeError) as refused:
        service.submit([Request(task=NORM, source=variant(5), id="k1")], ALICE)
    assert refused.value.status == 409


def test_stopping_aborts_what_is_in_flight_and_keeps_it_queued(service_of, tmp_path):
    gate = threading.Event()
    evaluator = StandIn(gate=gate)
    service = service_of(evaluator, workers=1)
    _, views = service.submit([Request(task=NORM, source=variant(6)),
                               Request(task=NORM, source=variant(7))], ALICE, is_batch=True)
    deadline = time.monotonic() + 10
    while service.status()["in_flight"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    threading.Timer(0.2, gate.set).start()  # the aborted evaluation returns
    service.stop(grace_s=10)
    assert evaluator.aborted and evaluator.closed
    assert service.status()["stopping"] and service.unfinished() == 2
    assert all(service.get(v["id"], ALICE)["state"] == "queued" for v in views)
    with pytest.raises(ServeError) as refused:
        service.submit([Request(task=NORM, source=variant(8))], ALICE)
    assert refused.value.status == 503
    restarted = Service(ServeConfig(out=service.config.out, default_mode="interpret", workers=1),
                        evaluator=StandIn())
    restarted.start()
    try:
        assert [restarted.wait_sync(v["id"], 30)["state"] for v in views] == ["done", "done"]
    finally:
        restarted.stop()


def test_many_callers_at_once(service_of):
    """Eight threads submit, read and wait at once: each kernel is evaluated once, every
    submission ends with its verdict, and the counts agree."""
    evaluator = StandIn()
    service = service_of(evaluator, workers=2)
    errors: list[BaseException] = []

    def caller(n: int) -> None:
        try:
            who = Principal(f"caller{n}")
            for k in range(6):
                _, views = service.submit([Request(task=NORM, source=variant(100 + k % 4))], who)
                view = service.wait_sync(views[0]["id"], 30)
                assert view is not None and view["state"] == "done", view
                assert service.get(views[0]["id"], who)["status"] == "correct"
                service.status()
        except BaseException as exc:  # noqa: BLE001 - shown by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(evaluator.calls) == sorted(set(evaluator.calls)) and len(evaluator.calls) == 4
    status = service.status()
    assert status["submissions"] == 48 and status["queue_length"] == 0 and status["in_flight"] == 0
    assert service.unfinished() == 0


# -- the verdict as its EvaluationResult ------------------------------------------------------------

FIELDS = dict(speedup=1.5, t_kernel_ms=0.25, trial_nonce="nonce-1", warnings=("slow",),
              stages={"static": {"ok": True}}, judged_on="cpu", extra={"newer_key": [1, 2]})


def test_the_verdict_is_kept_as_its_result_and_read_back_after_a_restart(service_of, tmp_path):
    evaluator = StandIn(**FIELDS)
    service = service_of(evaluator, workers=1)
    _, views = service.submit([Request(task=NORM, source=variant(20))], ALICE)
    done = service.wait_sync(views[0]["id"], 30)
    result = done["result"]
    assert isinstance(result, EvaluationResult)
    assert (result.status, result.speedup, result.trial_nonce, result.warnings) == \
        ("correct", 1.5, "nonce-1", ("slow",))
    assert result.kernel_file is None  # "<kernel>": the source is in the run directory
    assert done["status"] == "correct" and done["message"] == "ok"
    assert done["reward"]["value"] == 1.0
    # the run directory holds its event, with the service's keys after it
    written = [json.loads(line) for line in (service.config.out / "events.jsonl").read_text().splitlines()]
    event = next(e for e in written if e["type"] == "evaluation")
    assert {k: v for k, v in event.items() if k not in VERDICT_KEYS} == \
        {k: v for k, v in result.to_event().items() if k != "type"}
    assert (event["submission"], event["principal"], event["kind"]) == (views[0]["id"], "alice", "serve")
    assert event["reward"] == done["reward"] and event["job"] == f"serve|{views[0]['id']}"
    service.stop()
    restarted = Service(ServeConfig(out=service.config.out, default_mode="interpret", workers=1),
                        evaluator=StandIn())
    try:
        again = restarted.get(views[0]["id"], ALICE)
        assert again["result"] == result and again["reward"] == done["reward"]
        assert again["result"].extra == {"newer_key": (1, 2)}  # another writer's key, kept
    finally:
        restarted.stop()


def test_an_evaluator_that_returns_no_result_is_a_harness_error(service_of):
    service = service_of(StandIn(as_dict=True), workers=1, retries=1)
    _, views = service.submit([Request(task=NORM, source=variant(21))], ALICE)
    failed = service.wait_sync(views[0]["id"], 30)
    assert failed["state"] == "failed" and "not an EvaluationResult" in failed["error"], failed
    assert "result" not in failed and "reward" in failed  # interpret mode: the pending note


def test_the_api_answers_the_result_as_its_event_and_the_client_reads_it_back(service_of):
    """The JSON of a submission (GET, POST, a batch, the stream): the result is its event
    (``EvaluationResult.to_event``), the fields unset are left out, and a pending
    interpret-mode reward keeps its null value; the client's record reads it back whole."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from jaxbench.serve.app import create_app
    from jaxbench.serve.auth import Authenticator
    from jaxbench.serve.rewards import INTERPRET_NOTE
    from jaxbench.serve.wire import BatchReply, SubmissionReply

    gate = threading.Event()
    service = service_of(StandIn(gate=gate, **FIELDS), workers=1)
    app = create_app(service, Authenticator({}), openenv=False, manage_service=False)
    with TestClient(app) as http:
        queued = http.post("/v1/submissions", json={"task": NORM, "source": variant(22), "id": "s1"})
        assert queued.status_code == 202, queued.text
        waiting = queued.json()
        assert waiting == {
            "id": "s1", "state": waiting["state"], "task": NORM, "target": "tpu", "size": "small",
            "mode": "interpret", "trials": 3, "source_sha256": waiting["source_sha256"],
            "created": waiting["created"], "reward": {"value": None, "note": INTERPRET_NOTE}}
        assert waiting["state"] in ("queued", "running")
        gate.set()
        done = http.get("/v1/submissions/s1", params={"wait": 30}).json()
        result = service.get("s1", Principal("anonymous"))["result"]
        assert done["state"] == "done" and done["result"] == result.to_event()
        assert done["result"]["type"] == "evaluation" and "kernel_file" not in done["result"]
        assert done["result"]["newer_key"] == [1, 2] and done["result"]["warnings"] == ["slow"]
        assert {"chip", "batch", "finished", "cached_from", "error", "duplicate"} - set(done) == \
            {"chip", "batch", "cached_from", "error", "duplicate"}
        reply = SubmissionReply.from_json(done)
        assert reply.result == result and reply.status == "correct" and reply.reward_value == 1.0
        assert reply.finished_state and reply.to_json() == done
        assert SubmissionReply.from_json(json.loads(json.dumps(reply.to_json()))) == reply
        batch = http.post("/v1/batches", json={"task": NORM, "items": [{"source": variant(22)}],
                                                "id": "b1"}, params={"wait": 30}).json()
        read = BatchReply.from_json(batch)
        assert read.done and read.submissions[0].cached_from == "s1"
        assert read.submissions[0].result == result
        lines = http.get("/v1/batches/b1/stream", params={"timeout": 30}).text.splitlines()
        assert [SubmissionReply.from_json(json.loads(line)).result for line in lines] == [result]
    for bad in ({"id": "x"}, {"id": "x", "state": "lost", "task": NORM}, ["a list"]):
        with pytest.raises(ValueError):
            SubmissionReply.from_json(bad)


def test_only_the_state_and_the_leaf_parts_make_locks():
    """The documented design (jaxbench.serve.service): the state's owner makes the one lock
    over submissions; waiters, metrics and quota windows each make their own; nothing else
    in the service makes a lock or a condition."""
    makers = {}
    for path in sorted(SERVE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("Lock", "RLock", "Condition") \
                    and getattr(node.func.value, "id", None) == "threading":
                makers.setdefault(path.name, []).append(node.func.attr)
    assert {name: sorted(made) for name, made in makers.items()} == {
        "state.py": ["Condition", "Lock"], "waiting.py": ["Lock"],
                      "metrics.py": ["Lock"], "limits.py": ["Lock"]}
