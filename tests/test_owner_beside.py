"""A chip's owner taking several requests at once (judge/runner.py, serve_concurrently, and
judge_client.SharedRunner / ChipOwners(depth=2)), on a CPU: the real serving loop and the
real parent side, with each request's judging replaced by a stand-in that "compiles" without
the chip and then holds the chip (the runner's own lease) to "run and time", logging every use
from the device's side. Compiles overlap the chip's work; nothing overlaps a chip use."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from jaxbench.evaluator.parent.judge_client import ChipOwners

OWNER = '''
import json, os, sys, time
from jaxbench.contract import JudgeResponse
from jaxbench.evaluator.judge import runner

LOG = os.environ["FAKE_DEVICE_LOG"]

def use(phase, seconds, name):
    start = time.monotonic()
    time.sleep(seconds)
    with open(LOG, "a") as f:
        f.write(f"{phase} {start:.6f} {time.monotonic():.6f} {name}\\n")

def answer(request, lease):
    use("compile", request.get("compile_s", 0.2), request["name"])
    if request.get("hang"):
        time.sleep(60)
    lease(runner.CHIP)
    try:
        lease("exclusive")  # the timing's own lease line: already alone on the chip
        use("chip", request.get("chip_s", 0.2), request["name"])
    finally:
        lease(runner.FREE)
    return JudgeResponse(message=request["name"], spans={"pid": os.getpid()})

runner._answer = answer
print("ready", flush=True)
runner.serve_concurrently(sys.stdout, int(os.environ[runner.OWNER_DEPTH]))
'''


def _rows(log):
    return [(phase, float(a), float(b), name) for phase, a, b, name in
            (line.split() for line in log.read_text().splitlines())]


def test_compiles_run_beside_the_chip_and_chip_uses_never_overlap(tmp_path, monkeypatch):
    log = tmp_path / "device.log"
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(log))
    owners = ChipOwners(chips=1, command=(sys.executable, "-c", OWNER), env=dict(os.environ),
                        depth=2)
    outcomes: list = []
    try:
        threads = [threading.Thread(target=lambda i=i: outcomes.append(owners.run(
            {"name": f"r{i}", "compile_s": 0.3, "chip_s": 0.3}, 60))) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        owners.close()
    assert len(outcomes) == 6 and all(o.response and o.response["status"] == "ran"
                                      for o in outcomes), [o.log_tail for o in outcomes]
    assert {o.response["message"] for o in outcomes} == {f"r{i}" for i in range(6)}
    assert len({o.response["spans"]["pid"] for o in outcomes}) == 1  # one owner
    rows = _rows(log)
    chip = [r for r in rows if r[0] == "chip"]
    compiles = [r for r in rows if r[0] == "compile"]
    assert len(chip) == 6
    clash = [(a, b) for a in chip for b in chip if a is not b and a[1] < b[2] and b[1] < a[2]]
    assert clash == []  # the chip serves one request at a time
    beside = [(c, u) for c in compiles for u in chip if c[3] != u[3] and c[1] < u[2] - 0.05
              and u[1] < c[2] - 0.05]
    assert beside  # some compile ran while another request held the chip


def test_a_request_killed_for_anothers_timeout_is_sent_again(tmp_path, monkeypatch):
    log = tmp_path / "device.log"
    monkeypatch.setenv("FAKE_DEVICE_LOG", str(log))
    owners = ChipOwners(chips=1, command=(sys.executable, "-c", OWNER), env=dict(os.environ),
                        depth=2)
    outcomes: dict = {}
    try:
        hang = threading.Thread(target=lambda: outcomes.__setitem__("hang", owners.run(
            {"name": "hang", "hang": True, "compile_s": 0.05}, 2)))
        hang.start()
        ok = threading.Thread(target=lambda: outcomes.__setitem__("ok", owners.run(
            {"name": "ok", "compile_s": 3.0, "chip_s": 0.1}, 30)))
        ok.start()
        hang.join()
        ok.join()
    finally:
        owners.close()
    assert outcomes["hang"].timed_out and outcomes["hang"].response is None
    assert outcomes["ok"].response and outcomes["ok"].response["message"] == "ok", \
        outcomes["ok"].log_tail
    # its first owner was killed mid-compile (no line logged); the fresh one judged it
    assert [r[0] for r in _rows(log) if r[3] == "ok"] == ["compile", "chip"]


PREPARING_OWNER = '''
import sys
from jaxbench.contract import JudgeResponse
from jaxbench.evaluator.judge import fitting, runner

def answer(request, lease):  # what the owner had compiled for the chip when the request came
    return JudgeResponse(message=repr(sorted(size for _, size in fitting._KEPT)))

runner._answer = answer
print("ready", flush=True)
runner.serve(sys.stdout)
'''


@pytest.mark.parametrize("depth", [1, 2])
def test_the_owner_compiles_a_tasks_programs_when_asked_to_prepare(depth):
    """``prepare`` (sent when the case is known, before the candidate is traced): the owner
    compiles the task's reference, truth and drawing for its chip and keeps them for the
    request that follows; a task it cannot load is said, not fatal to the owner."""
    owners = ChipOwners(chips=1, command=(sys.executable, "-c", PREPARING_OWNER),
                        env=dict(os.environ), depth=depth)
    try:
        prepared = owners.run({"op": "prepare", "task": "12p_rmsnorm", "size": "small",
                               "xla_cache": False}, 300).response
        after = owners.run({"name": "a"}, 60).response
        unknown = owners.run({"op": "prepare", "task": "no_such_task", "size": "small"},
                             60).response
        still = owners.run({"name": "b"}, 60).response
    finally:
        owners.close()
    assert prepared["status"] == "ran" and prepared["seconds"] > 0 and "error" not in prepared
    assert prepared["misses"] == 0 and prepared["hits"] == 0  # the cache was not asked for
    assert after["message"] == "['small']"  # kept for the request that follows
    assert "no_such_task" in unknown["error"] and still["message"] == "['small']"


def test_a_task_and_size_is_prepared_once(monkeypatch):
    owners = ChipOwners(chips=1, command=(sys.executable, "-c", "pass"), env=dict(os.environ))
    sent: list = []
    monkeypatch.setattr(owners, "run", lambda payload, timeout_s: sent.append(payload))
    try:
        for size in ("small", "small", "full"):
            owners.prepare({"op": "prepare", "task": "12p_rmsnorm", "size": size}, 60)
        deadline = time.monotonic() + 10
        while len(sent) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
    finally:
        owners.close()
    assert sorted(p["size"] for p in sent) == ["full", "small"]
