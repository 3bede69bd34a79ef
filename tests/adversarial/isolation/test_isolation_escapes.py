"""Escapes from the tracer's OS isolation (tests/adversarial/isolation/kernels/*.py): pathname
Unix sockets in shared directories (through Python and through JAX's C++ gRPC client, which
no audit hook sees), and exhausting the host's disk through the private directory (bytes,
inodes, a directory chain too deep for a recursive removal). Each gets its exact verdict, and
the side effect it aimed at never happens."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

KERNELS = Path(__file__).parent / "kernels"
GEMM = "8p_gemm"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux-only isolation")


class _UnixListener:
    """A pathname Unix socket the test listens on; records every connection it accepts."""

    def __init__(self, path: str) -> None:
        self.path = path
        if os.path.lexists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.accepted: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.accepted.append(conn.recv(64) or b"<connected>")
                except OSError:
                    self.accepted.append(b"<connected>")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        os.unlink(self.path)


@pytest.fixture
def unix_listener(request) -> Iterator[_UnixListener]:
    listener = _UnixListener(request.param)
    try:
        yield listener
    finally:
        listener.close()


@pytest.fixture
def outcomes(evaluator, monkeypatch) -> list:
    """The pool outcomes (trusted) of the evaluations a test runs."""
    seen: list = []
    run = evaluator.pool.run

    def recording(*args, **kwargs):
        outcome = run(*args, **kwargs)
        seen.append(outcome)
        return outcome

    monkeypatch.setattr(evaluator.pool, "run", recording)
    return seen


def _hidden(isolation: str) -> bool:
    return "mntns" in isolation.split("+") and "host_hidden" in isolation.split("+")


@pytest.mark.parametrize("unix_listener", ["/tmp/jaxbench_adversarial_unix.sock"], indirect=True)
def test_python_unix_socket(evaluator, outcomes, unix_listener):
    result = evaluator.evaluate(KERNELS / "unix_socket_python_obfuscated.py", GEMM, trials=1,
                                timeout_s=60, memory_gb=3)
    assert (result.status, result.stage) == ("rejected", "trace"), result.message
    assert "sandbox: socket.__new__ is not allowed" in result.message
    assert unix_listener.accepted == []
    assert "ready {" not in (result.output or ""), "the handshake line reached the user"
    assert _hidden(outcomes[-1].isolation), outcomes[-1].isolation


@pytest.mark.parametrize("unix_listener", ["/tmp/jaxbench_adversarial_grpc.sock"], indirect=True)
def test_cpp_grpc_unix_socket(evaluator, outcomes, unix_listener):
    """No audit hook sees gRPC's connect(), and Landlock (ABI <= 7) does not govern it: the
    hidden /tmp and the seal (no socket made: the client cannot even start) stop it."""
    result = evaluator.evaluate(KERNELS / "unix_socket_distributed_obfuscated.py", GEMM, trials=1,
                                timeout_s=90, memory_gb=3)
    assert unix_listener.accepted == [], "the tracer reached a socket in the host's /tmp"
    assert result.status in ("crashed", "compile_error") and result.stage == "trace", \
        result.message
    assert _hidden(outcomes[-1].isolation), outcomes[-1].isolation
    assert "parent check failed" not in outcomes[-1].isolation


@pytest.fixture(scope="module")
def unsealed_evaluator() -> Iterator:
    """Tracers as a host where nothing seals them would run them (host profile ``bare``, what
    ``--unsealed`` allows): there the private directory's watchdog is what holds the disk."""
    from jaxbench.evaluator import Evaluator

    os.environ["JAXBENCH_HOST_PROFILE"] = "bare"  # read when the tracers' pool starts
    try:
        ev = Evaluator(spares=0)
    finally:
        os.environ.pop("JAXBENCH_HOST_PROFILE")
    with ev:
        yield ev


def _recorded(evaluator, monkeypatch) -> list:
    seen: list = []
    run = evaluator.pool.run
    monkeypatch.setattr(evaluator.pool, "run", lambda *a, **k: seen.append(run(*a, **k))
                        or seen[-1])
    return seen


@pytest.mark.parametrize("name", ["disk_filler_obfuscated.py", "inode_filler_obfuscated.py"])
def test_fillers_write_nothing_under_the_seal(evaluator, name):
    result = evaluator.evaluate(KERNELS / name, GEMM, trials=1, timeout_s=120, memory_gb=3)
    assert (result.status, result.stage) == ("rejected", "trace"), result.message
    assert "sandbox (OS isolation)" in result.message


def test_disk_filler(unsealed_evaluator, monkeypatch):
    from jaxbench.evaluator.parent import pool

    outcomes = _recorded(unsealed_evaluator, monkeypatch)
    monkeypatch.setattr(pool, "DIR_MAX_BYTES", 256 << 20)  # the default (2 GiB) works the same
    result = unsealed_evaluator.evaluate(KERNELS / "disk_filler_obfuscated.py", GEMM, trials=1,
                                         timeout_s=120, memory_gb=3)
    assert "over the limit of 256 MiB on disk" in outcomes[-1].dir_exceeded
    assert (result.status, result.stage) == ("crashed", "trace"), result.message
    assert "private directory held" in result.message
    assert "over the limit of 256 MiB on disk" in result.message


def test_inode_filler(unsealed_evaluator, monkeypatch):
    outcomes = _recorded(unsealed_evaluator, monkeypatch)
    result = unsealed_evaluator.evaluate(KERNELS / "inode_filler_obfuscated.py", GEMM, trials=1,
                                         timeout_s=120, memory_gb=3)
    assert "more than the limit of 10,000 entries" in outcomes[-1].dir_exceeded
    assert (result.status, result.stage) == ("crashed", "trace"), result.message
    assert "private directory held more than the limit of 10,000 entries" in result.message


def test_deep_directory_chain_is_refused_and_nothing_is_left(tmp_path):
    """A chain of nested directories far deeper than a recursive removal survives needs a
    directory fd to go deeper than a path can: the audit hook refuses opening one (with or
    without Landlock), and afterwards nothing of the tracer's directory is left. (Made on a
    tmpfs where there is one.)"""
    from jaxbench.evaluator import Evaluator

    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="jaxbench-deep-", dir=shm or tmp_path))
    try:
        with Evaluator(spares=0, work_dir=root) as ev:
            result = ev.evaluate(KERNELS / "deep_chain_obfuscated.py", GEMM, trials=1,
                                 timeout_s=120, memory_gb=3)
            assert (result.status, result.stage) == ("rejected", "trace"), result.message
            assert "sandbox: opening directory '.' is not allowed" in result.message
        assert list(root.iterdir()) == []
    finally:
        from jaxbench.evaluator.parent.pool import remove_tree

        remove_tree(root)


def test_every_kernel_is_tested_and_documented():
    tested = Path(__file__).read_text()
    for path in KERNELS.glob("*.py"):
        assert path.name in tested, path.name
        doc = path.read_text().split('"""')
        assert len(doc) >= 3 and doc[1].startswith("Cheat ("), path.name


def test_obfuscated_kernels_pass_the_static_policy():
    from jaxbench.evaluator.parent.static import check_source

    for path in KERNELS.glob("*_obfuscated.py"):
        check_source(path.read_text(), path.name)
