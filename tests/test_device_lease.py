"""The device lease (jaxbench.evaluator.common.lease): concurrent evaluations share one device, and
a timing never overlaps another candidate's compile, check or timing.

The end-to-end tests drive the real client and runner pool (jaxbench.evaluator.parent.judge_client)
against tests/fake_device_runner.py, which logs every use of its pretend device from the
device's side; the lease's own bookkeeping is not what is checked.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jaxbench.evaluator.common.lease import EXCLUSIVE, SHARED, DeviceLease, overlaps
from jaxbench.evaluator.parent.judge_client import RunnerPool

FAKE = (sys.executable, str(Path(__file__).with_name("fake_device_runner.py")))


def _device_log(path: Path) -> list[tuple[str, float, float, str]]:
    rows = []
    for line in path.read_text().splitlines():
        phase, start, end, name = line.split()
        rows.append((phase, float(start), float(end), name))
    return rows


def _timing_clashes(rows: list[tuple[str, float, float, str]]) -> list[tuple]:
    """Pairs where a timing overlapped any other use of the device by another candidate."""
    return [(a, b) for a in rows if a[0] == "time" for b in rows
            if b is not a and b[3] != a[3] and a[1] < b[2] and b[1] < a[2]]


def _run_concurrently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lease: DeviceLease | None,
                      payloads: list[dict], timeout_s: float = 30.0) -> tuple[list, list]:
    log = tmp_path / "device.log"
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(log))
    pool = RunnerPool(spares=0, command=FAKE)
    try:
        with ThreadPoolExecutor(len(payloads)) as threads:
            outcomes = list(threads.map(lambda p: pool.run(p, timeout_s, None, lease), payloads))
    finally:
        pool.close()
    return outcomes, _device_log(log) if log.exists() else []


def test_timings_never_overlap_anything_while_compiles_overlap(tmp_path, monkeypatch):
    lease = DeviceLease(record=True)
    payloads = [{"name": f"k{i}", "compile_s": 0.4, "time_s": 0.25} for i in range(4)]
    outcomes, rows = _run_concurrently(tmp_path, monkeypatch, lease, payloads)
    assert [o.response for o in outcomes] == [{"status": "ran", "name": f"k{i}"} for i in range(4)]
    assert sorted(r[0] for r in rows) == ["compile"] * 4 + ["recheck"] * 4 + ["time"] * 4
    assert _timing_clashes(rows) == []
    # the pipelining happened: candidates compiled at the same time
    compiles = [r for r in rows if r[0] == "compile"]
    assert any(a[1] < b[2] and b[1] < a[2] for a in compiles for b in compiles if a is not b)
    assert overlaps(lease.history) == []
    assert {kind for kind, _, _ in lease.history} == {SHARED, EXCLUSIVE}


def test_without_the_lease_the_same_run_clashes(tmp_path, monkeypatch):
    """The check above can fail: the same candidates without a lease time over each other."""
    payloads = [{"name": f"k{i}", "compile_s": 0.3, "time_s": 0.4} for i in range(3)]
    outcomes, rows = _run_concurrently(tmp_path, monkeypatch, None, payloads)
    assert all(o.response and o.response["status"] == "ran" for o in outcomes)
    assert _timing_clashes(rows)


def test_waiting_for_the_lease_is_not_the_candidates_time(tmp_path, monkeypatch):
    """Three timings of 0.6 s queue for the device; each candidate's limit is 1.5 s of its own
    work, which the third one's wait (about 1.2 s) would exceed if it counted."""
    payloads = [{"name": f"k{i}", "compile_s": 0.1, "time_s": 0.6} for i in range(3)]
    outcomes, rows = _run_concurrently(tmp_path, monkeypatch, DeviceLease(), payloads,
                                       timeout_s=1.5)
    assert [o.timed_out for o in outcomes] == [False] * 3
    assert all(o.response and o.response["status"] == "ran" for o in outcomes)
    assert _timing_clashes(rows) == []


def test_a_runner_that_dies_while_timing_gives_the_device_back(tmp_path, monkeypatch):
    lease = DeviceLease()
    payloads = [{"name": "dies", "compile_s": 0.05, "die_while_timing": True},
                {"name": "next", "compile_s": 0.3, "time_s": 0.1}]
    outcomes, rows = _run_concurrently(tmp_path, monkeypatch, lease, payloads, timeout_s=10)
    assert outcomes[0].response is None and outcomes[0].returncode == 3
    assert outcomes[1].response == {"status": "ran", "name": "next"}
    assert [r[3] for r in rows if r[0] == "time"] == ["next"]
    # nothing is left held: an exclusive holder gets in at once
    got = threading.Event()
    threading.Thread(target=lambda: (lease.acquire(EXCLUSIVE), got.set()), daemon=True).start()
    assert got.wait(2)


def test_a_waiting_timing_blocks_new_compiles_and_waits_for_running_ones():
    lease = DeviceLease(record=True)
    order: list[str] = []
    lease.acquire(SHARED)  # a compile in progress

    def timing() -> None:
        with lease.hold(EXCLUSIVE):
            order.append("time")

    def late_compile() -> None:
        with lease.hold(SHARED):
            order.append("late compile")

    timer = threading.Thread(target=timing)
    timer.start()
    time.sleep(0.2)  # the timing now waits for the compile in progress
    late = threading.Thread(target=late_compile)
    late.start()
    time.sleep(0.2)
    assert order == []  # neither the timing nor the late compile got in
    lease.release(SHARED)
    timer.join(5)
    late.join(5)
    assert order == ["time", "late compile"]
    assert overlaps(lease.history) == []


def test_overlaps_names_an_exclusive_hold_that_overlaps():
    assert overlaps([(SHARED, 0, 2), (SHARED, 1, 3)]) == []
    assert overlaps([(SHARED, 0, 2), (EXCLUSIVE, 1, 3)]) == [((SHARED, 0, 2), (EXCLUSIVE, 1, 3))]
    assert overlaps([(EXCLUSIVE, 0, 1), (EXCLUSIVE, 1, 2)]) == []
    with pytest.raises(ValueError, match="unknown lease kind"):
        DeviceLease().acquire("both")


def test_a_runner_that_reset_the_tpu_interpreter_is_replaced_not_reused(tmp_path, monkeypatch):
    """What a failed TPU interpreter leaves in a runner is JAX's and not known: a response
    marked ``retire`` sends the next request to a fresh runner."""
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(tmp_path / "log"))
    pool = RunnerPool(spares=0, command=FAKE)
    try:
        fast = {"compile_s": 0, "time_s": 0, "recheck_s": 0, "pid": True}
        pids = [pool.run({"name": name, **fast, **extra}, 30, None).response["pid"]
                for name, extra in (("a", {}), ("b", {"retire": True}), ("c", {}))]
    finally:
        pool.close()
    assert pids[0] == pids[1] != pids[2]


def test_the_runner_marks_its_response_after_a_tpu_interpreter_reset(monkeypatch):
    import io

    from jaxbench import backends
    from jaxbench.contract import JudgeResponse
    from jaxbench.evaluator.judge import runner

    def judge(request, lease):
        if request.task == "crash":
            backends.reset_tpu_interpreter()
        return JudgeResponse()

    monkeypatch.setattr(runner, "judge", judge)
    request = {"dir": "/nonexistent", "size": "small", "platform": "cpu", "target": "tpu",
               "mode": "interpret", "trial_keys": [], "recheck_keys": []}
    lines = "".join(json.dumps({**request, "task": t}) + "\n" for t in ("ok", "crash", "ok"))
    monkeypatch.setattr(runner.sys, "stdin", io.StringIO(lines))
    reply = io.StringIO()
    runner.serve(reply)
    answers = [json.loads(line) for line in reply.getvalue().splitlines()]
    assert [a.get("retire", False) for a in answers] == [False, True, False], answers

