"""``jaxbench serve`` under faults, over real HTTP: an evaluation's worker processes killed
mid-evaluation, and the whole server killed (SIGKILL) mid-batch and started again on its run
directory: nothing is lost, nothing finished is evaluated again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from serve_helpers import NORM_SEED, TASKS, Server, evaluations_of, events, variant  # noqa: E402

NORM = "12p_rmsnorm"
FLASH_SEED = TASKS / "1p_flash_attention/seed_tpu.py"


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (its children, theirs, ...), read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent]
        found += children
        frontier += children
    return found


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_worker_processes_killed_mid_evaluation(tmp_path):
    from jaxbench.serve import Client

    server = Server(tmp_path / "run", "--workers", "1")
    try:
        with Client(server.url, retries=0) as c:
            first = c.submit(variant(FLASH_SEED, "killed"), "1p_flash_attention")
            wait_for(lambda: c.result(first.id).state == "running", 120, "the evaluation to start")
            killed = wait_for(lambda: descendants(server.proc.pid), 60, "the evaluation's processes")
            for pid in killed:  # the tracers, the fork server, the trusted runner
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            ended = c.result(first.id, wait_s=300)
            assert ended.state in ("done", "failed"), ended
            if ended.state == "done":  # the evaluator's own verdict on a dead worker
                assert ended.result.status in ("crashed", "correct", "runtime_error", "timeout"), ended
                assert ended.reward["correctness"] <= 1.0
            after = c.evaluate(variant(NORM_SEED, "after the kill"), NORM, timeout_s=300)
            assert after.status == "correct", after
            assert c.health()["status"] == "ok"
    finally:
        server.stop()


def test_server_killed_and_restarted_mid_batch_loses_nothing(tmp_path):
    from jaxbench.serve import Client

    out = tmp_path / "run"
    sources = [variant(NORM_SEED, f"batch {i}") for i in range(3)]
    server = Server(out, "--workers", "1")
    try:
        with Client(server.url, retries=0) as c:
            batch = c.submit_batch(sources, NORM, id="restart-batch")
            ids = batch.ids
            first = c.result(ids[0], wait_s=300)
            assert first.status == "correct", first
    finally:
        server.kill()  # SIGKILL, whole process group, the second kernel in flight
    assert not any(e["type"] == "serve_stop" for e in events(out))
    server = Server(out, "--workers", "1")
    try:
        assert "queued submissions resumed" in server.log()
        with Client(server.url, retries=0) as c:
            # the client retries its request (the same ids): the same batch, nothing new
            again = c.submit_batch([{"source": s, "id": i} for s, i in zip(sources, ids, strict=True)],
                                   NORM, id="restart-batch")
            assert again.ids == ids
            finished = {v.id: v for v in c.stream(batch="restart-batch", timeout_s=600)}
            from_disk = c.result(ids[0])
            assert from_disk.finished == first.finished  # served from disk
            assert from_disk.result == first.result  # its result's event, read back whole
    finally:
        server.stop()
    assert sorted(finished) == sorted(ids)
    assert all(v.state == "done" and v.result.status == "correct" for v in finished.values())
    digests = [v.source_sha256 for v in finished.values()]
    assert [evaluations_of(out, d) for d in digests] == [1, 1, 1]
    assert sum(e["type"] == "serve_submission" for e in events(out)) == 3
    report = subprocess.run([sys.executable, "-m", "jaxbench.cli", "report", str(out), "--json"],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert report.returncode == 0 and NORM in report.stdout, report.stderr


def test_a_stopped_server_says_what_stays_queued(tmp_path):
    """SIGTERM with one kernel in flight and one waiting: the last line names both as queued in
    the run directory, and the command that resumes them."""
    from jaxbench.serve import Client

    out = tmp_path / "run"
    server = Server(out, "--workers", "1")
    try:
        with Client(server.url, retries=0) as c:
            batch = c.submit_batch([variant(FLASH_SEED, f"stop {i}") for i in range(2)],
                                   "1p_flash_attention", id="stop-batch")
            first = batch.ids[0]
            wait_for(lambda: c.result(first).state == "running", 120, "the evaluation to start")
    finally:
        assert server.stop() in (0, -15), server.log()  # uvicorn re-raises the SIGTERM it caught
    wait_for(lambda: "jaxbench serve: stopped" in server.log(), 10, "the stop line")
    last = server.log().strip().splitlines()[-1]
    assert last == (f"jaxbench serve: stopped; 2 submissions stay queued in {out} and resume when "
                    f"`jaxbench serve --out {out}` starts again"), server.log()


def test_the_stop_line_of_an_empty_queue():
    from jaxbench.serve.server import stopped_line

    assert stopped_line(0, "runs/serve") == \
        "jaxbench serve: stopped; nothing stays queued (run directory runs/serve)"
    assert "1 submission stays queued in runs/serve" in stopped_line(1, "runs/serve")
