"""The tracers' fork server (sandbox/zygote.py, pool.Zygote): tracers forked from it are isolated
exactly as tracers started as commands, die with it, and the pool goes on without it."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest
from signal_helpers import alive

from jaxbench.contract import EvaluationResult
from jaxbench.evaluator import Evaluator
from jaxbench.evaluator.parent.pool import TracerPool, _Forked
from jaxbench.tasks import get_task


def _evaluate_seed(monkeypatch, fork_server: str) -> tuple[EvaluationResult, type]:
    monkeypatch.setenv("JAXBENCH_FORK_SERVER", fork_server)
    path = get_task("12p_rmsnorm").kernel_files()[("seed", "tpu")]
    with Evaluator() as ev:
        ev.pool.settle()
        kind = type(ev.pool._spares.queue[0].proc)
        return ev.evaluate(path, "12p_rmsnorm", target="tpu", trials=1), kind


def test_forked_tracers_are_isolated_like_started_ones(monkeypatch):
    forked, forked_kind = _evaluate_seed(monkeypatch, "1")
    started, started_kind = _evaluate_seed(monkeypatch, "0")
    assert forked_kind is _Forked and started_kind is subprocess.Popen
    assert forked.status == started.status == "correct"
    assert forked.isolation == started.isolation
    for part in ("landlock", "userns", "netns", "mntns", "no_new_privs"):
        assert part in forked.isolation


def test_tracers_die_with_the_fork_server_and_the_pool_goes_on():
    pool = TracerPool(spares=1)
    try:
        if pool._zygote is None:
            pytest.skip("no fork server on this host")
        pool.settle()
        spare = pool._spares.queue[0]
        assert isinstance(spare.proc, _Forked) and alive(spare.proc.pid)
        os.kill(pool._zygote.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while alive(spare.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(spare.proc.pid), "a forked tracer outlived its fork server"
        worker = pool._take()  # the dead spare is replaced by a tracer started as a command
        try:
            assert isinstance(worker.proc, subprocess.Popen)
        finally:
            worker.kill()
            worker.cleanup()
    finally:
        pool.close()


def test_a_server_that_does_not_answer_in_time_is_closed(tmp_path):
    """A late reply would pair the next request with the wrong tracer: after a timeout the
    server is killed, and spawning says so (the pool then starts tracers as commands)."""
    from jaxbench.evaluator.parent.pool import Zygote, tracer_env

    zygote = Zygote(tracer_env(), timeout_s=0.001)  # it is still importing JAX
    read_end, write_end = os.pipe()
    try:
        with open(tmp_path / "log", "wb") as log:
            assert zygote.spawn(tmp_path, read_end, log.fileno()) is None
        assert zygote.proc.poll() is not None
        assert zygote.spawn(tmp_path, read_end, write_end) is None
    finally:
        os.close(read_end)
        os.close(write_end)
        zygote.close()


def test_a_forked_tracer_leads_its_group_before_the_pool_hears_its_pid(tmp_path):
    """The pool kills a tracer by its process group, so the group must exist when the pid
    arrives: a pool closed right after a spare was forked used to find no group to kill, and
    then waited forever for a spare that lived on. Every pid the server hands out names a
    group leader already; a pool opened and closed at once returns."""
    from jaxbench.evaluator.parent.pool import Zygote, tracer_env

    zygote = Zygote(tracer_env())
    try:
        for i in range(20):
            directory = tmp_path / str(i)
            directory.mkdir()
            read_end, write_end = os.pipe()
            with open(directory / "log", "wb") as log:
                pid = zygote.spawn(directory, read_end, log.fileno())
            os.close(read_end)
            assert pid is not None
            assert os.getpgid(pid) == pid  # no window where the group is missing
            os.killpg(pid, signal.SIGKILL)
            os.close(write_end)
            assert zygote.exit_code(pid, timeout=60) == -signal.SIGKILL
    finally:
        zygote.close()
    for _ in range(3):  # in a thread, so a close that waits forever fails the test, not hangs it
        closing = threading.Thread(target=lambda: TracerPool(spares=2, root=str(tmp_path)).close(),
                                   daemon=True)
        closing.start()
        closing.join(60)
        assert not closing.is_alive(), "the pool's close still waits after 60 s"
