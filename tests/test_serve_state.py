"""The service's core without HTTP or a real evaluator: one owner of the state
(:class:`jaxbench.serve.state.ServiceState`), the workers, waiting, retries, stopping, and many
threads at once. A stand-in evaluator answers at once, or when a test lets it."""

from __future__ import annotations

import ast
import asyncio
import threading
import time
from pathlib import Path

import pytest

from jaxbench.serve.auth import Principal
from jaxbench.serve.config import Request, ServeConfig, ServeError
from jaxbench.serve.service import Service

SERVE = Path(__file__).resolve().parents[1] / "src/jaxbench/serve"
NORM = "12p_rmsnorm"
SOURCE = (Path(__file__).resolve().parents[1]
          / "src/jaxbench/tasks/jaxbench/12p_rmsnorm/seed_tpu.py").read_text()
ALICE, BOB = Principal("alice"), Principal("bob")


class StandIn:
    """An evaluator: ``evaluate`` answers ``correct`` (or raises ``fail_first`` times), after
    ``gate`` is set; it counts its calls and whether it was aborted or closed."""

    def __init__(self, fail_first: int = 0, gate: threading.Event | None = None) -> None:
        self.fail_first = fail_first
        self.gate = gate
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
        return {"status": "correct", "message": "ok", "mode": settings.mode,
                "kernel_file": "<kernel>"}

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
